-- 0008_cluster.sql: results are keyed by cluster as well as job, step and
-- node (docs/service.md, "Clusters and reused job ids").  Two clusters
-- sharing a service number their jobs independently, and a cluster that
-- lost slurmctld's state hands out job ids again: the same (job, step,
-- node) may then be another run.  A run is told apart by its cluster
-- (the result's "cluster", '' when it has none), its owner and its start
-- time; a retried upload of the same run has all three, so it is still
-- recognised (a duplicate when the documents are equal, else a conflict).
ALTER TABLE results ADD COLUMN cluster TEXT NOT NULL DEFAULT '';

DROP INDEX IF EXISTS results_job_step_node;
CREATE UNIQUE INDEX results_run ON results
	(job, step, node, cluster, uid, started_at) WHERE job IS NOT NULL;
