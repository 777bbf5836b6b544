-- peek: the store's now and the due time of the earliest waiting task, for
-- the wake-up wait. Returns {now, due or false}.
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {int(now_ms()), first[2] or false}
