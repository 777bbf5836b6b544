-- leader_get: KEYS[1] leader HASH. Returns {worker, token, until} of the
-- unexpired term, or nil.
local now = now_ms()
local w, t, u = unpack(redis.call('HMGET', KEYS[1], 'w', 't', 'u'))
if w and (tonumber(u) or 0) > now then return {w, t, u} end
return false
