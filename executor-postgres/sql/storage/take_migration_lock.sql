-- Tries to take the migration lock: an advisory lock with a key of this
-- crate's own, so it never waits on (or holds up) an application's own sqlx
-- migrations in the same database. Advisory locks are per database.
-- $1 the key.
SELECT pg_try_advisory_lock($1) AS granted
