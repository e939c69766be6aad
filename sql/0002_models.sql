-- 0002_models.sql: learned models (docs/service.md "Learned
-- models").  One row per (user, application identity, shape): the model
-- document is the aggregated communication matrix of the user's runs of
-- that executable with that shape, its topology and last mapping.  The
-- indexed columns repeat the document's key for lookups and listings.
CREATE TABLE models (
	id INTEGER PRIMARY KEY,
	uid INTEGER NOT NULL,			-- owner: whose runs fed it
	user TEXT NOT NULL,
	app TEXT NOT NULL,			-- basename of the executable
	executable TEXT NOT NULL,		-- of the latest run
	exe_hash TEXT NOT NULL,
	ranks INTEGER NOT NULL,
	threads_per_rank INTEGER NOT NULL,
	argv_shape TEXT NOT NULL,
	runs INTEGER NOT NULL,
	stability REAL,				-- NULL after one run
	threads INTEGER NOT NULL,		-- identities in the model
	last_result_id INTEGER NOT NULL,	-- the run folded in last
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	model TEXT NOT NULL,			-- canonical JSON (commap-model)
	UNIQUE (uid, exe_hash, ranks, threads_per_rank, argv_shape)
);

CREATE INDEX models_app ON models (app, updated_at);
CREATE INDEX models_uid ON models (uid, updated_at);
