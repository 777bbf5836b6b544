-- pause: KEYS[1] the `paused` SET of one partition (common/02_keys.lua), ARGV[1]
-- '1' to pause queue ARGV[2], '0' to resume it. Idempotent either way.
if ARGV[1] == '1' then return redis.call('SADD', KEYS[1], ARGV[2]) end
return redis.call('SREM', KEYS[1], ARGV[2])
