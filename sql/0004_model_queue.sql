-- 0004_model_queue.sql: learned models are folded off the upload path
-- (docs/service.md, "Learned models").  Every new result that names an
-- executable hash is queued here by a trigger, so the mark is written in
-- the upload's own transaction: an acknowledged upload always has its
-- pending fold recorded, and a crash never loses one.  The service's
-- model worker (service/svc_model_worker.c) folds queued results into
-- their models in upload order and deletes their rows in the same
-- transaction as the models it stores: every run is folded exactly once.
CREATE TABLE model_queue (
	result_id INTEGER PRIMARY KEY REFERENCES results (id),
	uid INTEGER NOT NULL,			-- the result's owner
	exe_hash TEXT NOT NULL			-- part of the model key
);

-- GET /v1/models folds the pending runs of the asked model first.
CREATE INDEX model_queue_key ON model_queue (uid, exe_hash, result_id);

CREATE TRIGGER results_model_queue AFTER INSERT ON results
	WHEN NEW.exe_hash IS NOT NULL
BEGIN
	INSERT INTO model_queue (result_id, uid, exe_hash)
		VALUES (NEW.id, NEW.uid, NEW.exe_hash);
END;
