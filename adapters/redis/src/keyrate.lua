-- SPDX-License-Identifier: MIT
-- keyrate.lua - one keyed rate decision on the Redis server (libband-redis).
--
-- KEYS[1]  the bucket's key (prefix + the application's key bytes)
-- ARGV     mode ("t" take, "a" available, "f" forget), n, tokens, period (ns), burst
--
-- The bucket is a hash {m = units missing from full, l = the server time of m, in us,
-- p = the period m was counted with, r = the tokens per period it refills with}.
-- One token is `period` units and `tokens` units flow in per ns, as in band/keyrate.h;
-- the time is the server's (TIME), so every client shares one clock. A key that is full
-- is deleted (it expires when it would be full again), so an absent key is a full one.
-- Lua numbers are doubles: every integer here stays below 2^53 because the caller keeps
-- tokens <= 2^32 and burst x period <= 2^52, and numbers are written with %.0f, never
-- with tostring's 14 digits.
-- Returns: "t" {1, 0} granted or {0, retry_after_ns}; "a" whole tokens; "f" 1 when the key
-- was short of full, 0 when it was full (absent, or refilled in the last ms of its TTL).
-- Redis before 5 replicates scripts verbatim, which TIME before a write forbids.
if redis.replicate_commands then redis.replicate_commands() end

local mode = ARGV[1]
local n = tonumber(ARGV[2])
local tokens = tonumber(ARGV[3])
local period = tonumber(ARGV[4])
local burst = tonumber(ARGV[5])
local depth = burst * period

-- floor(a / b) and ceil(a / b) for integers a >= 0, b >= 1, exact below 2^53
local function floor_div(a, b)
    local q = math.floor(a / b)
    if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
    return q
end
local function ceil_div(a, b)
    local q = floor_div(a, b)
    if q * b < a then q = q + 1 end
    return q
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

if mode == 'f' then
    -- a key lives until a little after it is full again (its TTL is rounded up to the ms):
    -- short of full is judged by its own rate, the one it was written with
    local f = redis.call('HMGET', KEYS[1], 'm', 'l', 'r')
    redis.call('DEL', KEYS[1])
    if not (f[1] and f[2] and f[3]) then return 0 end
    local m, l, r = tonumber(f[1]), tonumber(f[2]), tonumber(f[3])
    if now <= l or (now - l) * 1000 < ceil_div(m, r) then return 1 end
    return 0
end
local missing = 0
local st = redis.call('HMGET', KEYS[1], 'm', 'l', 'p')
if st[1] and st[2] and st[3] then
    missing = tonumber(st[1])
    local last = tonumber(st[2])
    local p = tonumber(st[3])
    if p ~= period then
        -- written under another period: keep the shortfall in whole tokens, rounded up
        missing = ceil_div(missing, p) * period
        if missing > depth then missing = depth end
    end
    if now < last then
        now = last -- the server's clock stepped back: no time elapsed
    elseif now > last then
        local dt = (now - last) * 1000 -- ns since m was written
        if dt >= ceil_div(missing, tokens) then
            missing = 0
        else
            missing = missing - dt * tokens -- dt x tokens < missing < 2^53
        end
    end
    if missing > depth then missing = depth end -- settings changed to a lower burst
end

if mode == 'a' then
    return floor_div(depth - missing, period)
end

local after = missing + n * period
if after > depth then
    return {0, ceil_div(after - depth, tokens)}
end
redis.call('HSET', KEYS[1], 'm', string.format('%.0f', after), 'l', string.format('%.0f', now),
    'p', string.format('%.0f', period), 'r', string.format('%.0f', tokens))
-- full again after ceil(after / tokens) ns: expire then (in ms, rounded up, one more)
redis.call('PEXPIRE', KEYS[1], ceil_div(ceil_div(after, tokens), 1000000) + 1)
return {1, 0}
