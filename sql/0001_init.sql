-- 0001_init.sql: the first schema of the commap service (docs/service.md).
-- Applied by commap-service at start inside one transaction together with
-- its row in schema_version; never edit a released migration, add
-- 0002_*.sql instead.

-- One row per uploaded agent result (one job step on one node): the
-- canonical document itself plus the columns the API filters and sorts on.
CREATE TABLE results (
	id INTEGER PRIMARY KEY,
	upload_id TEXT UNIQUE,			-- client-supplied, optional
	job INTEGER,				-- NULL outside Slurm
	step INTEGER,
	node TEXT NOT NULL,
	uid INTEGER NOT NULL,			-- owner: who may read it
	user TEXT NOT NULL,
	executable TEXT NOT NULL,
	app TEXT NOT NULL,			-- last component of executable
	exe_hash TEXT,
	mode TEXT NOT NULL,
	backend TEXT,
	started_at TEXT NOT NULL,		-- YYYY-MM-DDTHH:MM:SSZ (UTC)
	ended_at TEXT NOT NULL,
	ranks INTEGER NOT NULL,
	threads INTEGER NOT NULL,
	edges INTEGER NOT NULL,
	migrations INTEGER NOT NULL,
	final_cost REAL,			-- NULL without a timeline cost
	uploader_uid INTEGER NOT NULL,
	received_at TEXT NOT NULL,
	document TEXT NOT NULL,			-- canonical JSON (sorted keys)
	CHECK ((job IS NULL) = (step IS NULL))
);

-- A retried upload of the same step and node is the same result.
CREATE UNIQUE INDEX results_job_step_node ON results (job, step, node)
	WHERE job IS NOT NULL;
CREATE INDEX results_uid_started ON results (uid, started_at);
CREATE INDEX results_started ON results (started_at);
CREATE INDEX results_app ON results (app, started_at);
CREATE INDEX results_executable ON results (executable, started_at);
CREATE INDEX results_exe_hash ON results (exe_hash);
