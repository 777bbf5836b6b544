-- The per-call state: the last part of the prelude. Uses 02_keys,
-- 03_counts and 05_limits, whose per-call locals it resets.

-- The state of the parts above that belongs to one call. A script
-- prepended with the prelude runs begin() once per call, right here; in
-- the function library (src/scripts.rs) these locals outlive a call, and
-- every function calls begin() first, so no call sees another's caches, count deltas or keys.
local function begin()
  levels_cache, touched, deltas = {}, {}, {}
  LIMITS_BASE = KEYS[8] and string.sub(KEYS[8], 1, -7) or ''
  limits_exist = nil
  slot_freed = false
end
begin()
