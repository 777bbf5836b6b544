-- The nonce of the submit that created each task (`NewTask::nonce`, its 64
-- bits as a signed BIGINT): a submit sent again after its answer was lost
-- (a connection reset after the INSERT committed) carries the same id and
-- nonce, and finds the task its first try stored: it answers `Created`,
-- not `DuplicateId`, and the task exists once. NULL for tasks stored before
-- this column or moved in from another tier; such a task answers a resend
-- `DuplicateId`, as before.
--
-- A nullable column without a default is a catalog-only change: no table
-- rewrite.

ALTER TABLE reliable_executor_tasks ADD COLUMN IF NOT EXISTS submit_nonce BIGINT NULL;
