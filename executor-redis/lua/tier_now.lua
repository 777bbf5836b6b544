-- tier_now: the store's clock in ms, read on the node holding KEYS[1] (the
-- namespace's first partition), so tier decisions use the clock the
-- namespace's scripts use.
local t = redis.call('TIME')
return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
