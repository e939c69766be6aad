-- 0003_jobs_index.sql: the job list (GET /v1/jobs, the /jobs page) walks
-- results newest first and keeps each job's first-started result; this
-- index finds whether a job has an earlier result in one probe, so the
-- list stops after LIMIT jobs instead of grouping every row
-- (docs/PERFORMANCE.md, "Service").
CREATE INDEX results_job_started ON results (job, started_at)
	WHERE job IS NOT NULL;
