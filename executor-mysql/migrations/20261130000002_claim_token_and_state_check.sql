-- Issue 12 hardening.
--
-- 1. `claim_token`: the token of the last claim or reap that changed the row.
--    Claims and reaps are autocommit statements now (no transaction holds
--    locks across a client round trip, so a paused process holds nothing):
--    an UPDATE stamps its own random token, and the rows it changed are
--    read back by primary key and that token. No index: the read-back
--    names its ids.
-- 2. `ck_tasks_state`: `state` holds exactly one of the eight states. A
--    hand-edited 'created' used to read as CREATED (the parser ignores case)
--    while the generated columns (binary collation) never saw it waiting, so
--    it never ran and the counts lied. Compared as bytes: `ascii_bin` pads
--    with spaces, so a plain IN would let 'RUNNING ' through. Rows already
--    holding another value are first moved to ERROR with the reason, so the
--    constraint applies. MySQL 8.0.16+ and MariaDB 10.2+ enforce CHECK
--    constraints.

UPDATE reliable_executor_tasks
   SET last_error = CONCAT('corrupt record: unknown state `', state, '` (moved to ERROR by migration 20261130000002)'),
       finished_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED),
       worker = NULL,
       lease_until = NULL,
       state = 'ERROR'
 WHERE CAST(state AS BINARY) NOT IN ('CREATED', 'PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'TIMEOUT', 'CANCELLED', 'ERROR');

-- One statement, so the table is rebuilt once and the change is all or nothing.
ALTER TABLE reliable_executor_tasks
    ADD COLUMN claim_token BIGINT UNSIGNED NULL,
    ADD CONSTRAINT ck_tasks_state
        CHECK (CAST(state AS BINARY) IN ('CREATED', 'PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'TIMEOUT', 'CANCELLED', 'ERROR'));
