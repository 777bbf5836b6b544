-- ingest: creates the tasks waiting in the partition's inbox
-- (common/07_inbox.lua), up to INBOX_MAX entries per call. Rust runs it
-- ahead of every read or change of existing tasks by id, count or listing
-- (RedisStorage::drained, the one way to them), so a task submitted
-- through the inbox is seen by the next call as if a script had created it. Returns the
-- number of entries left behind (the caller calls again while it is not
-- 0). The due ZSET is checked first: ingest writes to it.
local left = redis.pcall('LLEN', ARGV[1] .. 'inbox')
if type(left) ~= 'number' or left == 0 then return 0 end
check_keys(1)
local created
left, created = ingest(now_ms())
flush_counts()
if created > 0 then wake() end
return left
