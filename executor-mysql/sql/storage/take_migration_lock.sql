-- Takes the migration lock, waiting up to 10 s: 1 granted, 0 timed out, NULL
-- an error. `GET_LOCK` names are server-wide and at most 64 characters in
-- MySQL, so the database's name is hashed into it.
SELECT CAST(GET_LOCK(CONCAT('reliable_executor_migrate_', SHA1(COALESCE(DATABASE(), ''))),
    10) AS SIGNED) AS granted
