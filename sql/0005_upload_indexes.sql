-- 0005_upload_indexes.sql: drop the indexes of results that no query
-- uses (docs/PERFORMANCE.md, "Service").  Every upload wrote a leaf page
-- of each index to the WAL (and again at the checkpoint), about a sixth
-- of what storing a 25 KB result writes.  EXPLAIN QUERY PLAN of every
-- statement on results (service/svc_db.c, service/svc_models.c): the job
-- list walks results_started and probes results_job_started (0003), the
-- application list walks results_executable, lookups use the primary
-- key, results_job_step_node and the upload_id index.  The filters on
-- uid, app and exe_hash are not indexable as written ("?1 IS NULL OR
-- uid = ?1"), so these three were only ever written, never read.
DROP INDEX IF EXISTS results_uid_started;
DROP INDEX IF EXISTS results_app;
DROP INDEX IF EXISTS results_exe_hash;
