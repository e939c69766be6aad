-- 0007_model_quarantine.sql: a stored model the service cannot read (its
-- document is not JSON, or not a model) is moved here by the model worker
-- (service/svc_model_quarantine.c) in the transaction that folds the next
-- run of its key into a fresh model; the worker logs one line naming it.
-- A bad row so never stops the queue: the other models' runs are folded
-- in the same batch.  Kept for an administrator to look at; nothing reads
-- it back.
CREATE TABLE models_quarantine (
	id INTEGER PRIMARY KEY,
	model_id INTEGER NOT NULL,		-- its id in models
	uid INTEGER NOT NULL,
	exe_hash TEXT NOT NULL,
	ranks INTEGER NOT NULL,
	threads_per_rank INTEGER NOT NULL,
	argv_shape TEXT NOT NULL,
	reason TEXT NOT NULL,			-- why it could not be read
	quarantined_at TEXT NOT NULL,
	model TEXT				-- the stored text, as it was
);
