-- The nonce of the submit that created each task (`NewTask::nonce`): a
-- submit sent again after its answer was lost (a connection reset after the
-- INSERT committed) carries the same id and nonce, and finds the task its
-- first try stored: it answers `Created`, not `DuplicateId`, and the task
-- exists once. NULL for tasks stored before this column or moved in from
-- another tier; such a task answers a resend `DuplicateId`, as before.
--
-- A nullable column without a default: MariaDB 10.3+ and MySQL 8.0 add it
-- in place (ALGORITHM=INSTANT), without copying the table.

ALTER TABLE reliable_executor_tasks ADD COLUMN submit_nonce BIGINT UNSIGNED NULL;
