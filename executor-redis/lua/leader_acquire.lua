-- leader_acquire: KEYS[1] leader HASH, KEYS[2] token sequence. ARGV[1] worker,
-- ARGV[2] ttl ms. A free or expired seat starts a new term with the next
-- token; the holder renews its own term (same token). Returns
-- {worker, token, until} or nil while another worker leads.
local now = now_ms()
local w, t, u = unpack(redis.call('HMGET', KEYS[1], 'w', 't', 'u'))
local until_ms = int(now + tonumber(ARGV[2]))
if w and (tonumber(u) or 0) > now then
  if w ~= ARGV[1] then return false end
  redis.call('HSET', KEYS[1], 'u', until_ms)
  return {w, t, until_ms}
end
local token = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'w', ARGV[1], 't', token, 'u', until_ms)
return {ARGV[1], int(token), until_ms}
