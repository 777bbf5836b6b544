-- Tells the waiters of a namespace in every process that work may be due, for a
-- change no task row shows (a queue resumed, a limit raised or removed): the
-- triggers announce only what happens to tasks.
-- $1 the channel, $2 namespace.
SELECT pg_notify($1, $2)
