-- Releases the migration lock (see take_migration_lock.sql).
SELECT RELEASE_LOCK(CONCAT('reliable_executor_migrate_', SHA1(COALESCE(DATABASE(), ''))))
