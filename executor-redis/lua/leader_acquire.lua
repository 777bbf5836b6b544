-- leader_acquire: KEYS[1] leader HASH, KEYS[2] token sequence. ARGV[1] worker,
-- ARGV[2] ttl ms. A free or expired seat starts a new term with the next
-- token; the holder renews its own term (same token). Returns
-- {worker, token, until} or nil while another worker leads.
-- A leader key that is not a hash, or a term whose token or expiry is not a
-- whole number, counts as a free seat. A sequence that is not a whole number
-- restarts at the store's clock in ms, above any token INCR could have
-- reached, so tokens still only grow.
local ttl = nat(ARGV[2])
if not ttl then return redis.error_reply('ERR leader_acquire: ttl is not a whole number') end
local now = now_ms()
local until_ms = int(now + ttl)
local term = fields(KEYS[1], 'w', 't', 'u')
local w, t, u = false, false, false
if term then w, t, u = term[1], nat(term[2]), nat(term[3]) end
if w and t and u and u > now then
  if w ~= ARGV[1] then return false end
  redis.call('HSET', KEYS[1], 'u', until_ms)
  return {w, int(t), until_ms}
end
local seq = redis.pcall('GET', KEYS[2])
local token = nat(seq)
if seq == false then
  token = t or 0
elseif not token then
  token = math.max(now, t or 0)
elseif token >= SAFE then
  return redis.error_reply('ERR leader_acquire: the token sequence is exhausted')
end
token = token + 1
redis.call('SET', KEYS[2], int(token))
if not term then redis.call('DEL', KEYS[1]) end
redis.call('HSET', KEYS[1], 'w', ARGV[1], 't', int(token), 'u', until_ms)
return {ARGV[1], int(token), until_ms}
