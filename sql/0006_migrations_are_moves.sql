-- 0006_migrations_are_moves.sql: results.migrations counts the moves of
-- threads already placed (entries of the document's "migrations" with
-- "from" >= 0), as the reports do; it counted first placements too, so
-- the job list showed 8 migrations for a job whose 8 threads were each
-- pinned once and never moved.  Recount the stored results from their
-- documents (canonical JSON, so json_each reads them).
UPDATE results SET migrations = (
	SELECT COUNT(*) FROM json_each(results.document, '$.migrations')
	WHERE json_extract(json_each.value, '$.from') >= 0
);
