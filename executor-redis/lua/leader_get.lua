-- leader_get: KEYS[1] leader HASH. Returns {worker, token, until} of the
-- unexpired term, or nil (also for a leader key that does not parse).
local now = now_ms()
local term = fields(KEYS[1], 'w', 't', 'u')
if not term then return false end
local w, t, u = term[1], nat(term[2]), nat(term[3])
if w and t and u and u > now then return {w, int(t), int(u)} end
return false
