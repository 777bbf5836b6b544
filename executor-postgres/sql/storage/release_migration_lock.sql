-- Releases the migration lock (closing the connection releases it too).
-- $1 the key.
SELECT pg_advisory_unlock($1)
