-- peek: the store's now in microseconds and the due time (ms) of the
-- earliest waiting task, for the wake-up wait. Returns {now_us, due or false}.
local t = redis.call('TIME')
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {t[1] .. string.format('%06d', tonumber(t[2])), first[2] or false}
