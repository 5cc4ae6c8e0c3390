-- SPDX-License-Identifier: MIT
-- keyrate.lua - one keyed rate decision on the Redis server (libband-redis).
--
-- KEYS[1]  the bucket's key (prefix + the application's key bytes)
-- ARGV[1]  33 bytes: the mode ("t" take, "a" available, "f" forget), then n, tokens,
--          period (ns) and burst as little-endian IEEE doubles (struct '<c1dddd')
--
-- The bucket is one string of five little-endian doubles (struct '<ddddd'): m, the units
-- missing from full; l, the server time of m in us; p, the period m was counted with;
-- r, the tokens per period it refills with; e, the server time in us at which the key's
-- TTL ends. One token is `period` units and `tokens` units flow in per ns, as in
-- band/keyrate.h; the time is the server's (TIME), so every client shares one clock. A
-- key expires some time after its bucket is full again (up to SLACK_MS later), so an
-- absent key is a full one; a value of another shape is read as absent and replaced.
-- Lua numbers are doubles: every integer here stays below 2^53 because the caller keeps
-- tokens <= 2^32 and burst x period <= 2^52, and doubles hold such integers exactly, in
-- the arguments and in the bucket alike.
-- The work per call is kept small (it is most of what a decision costs beyond the round
-- trip): packed numbers instead of decimal strings, one GET, and a single integer as the
-- reply. Setting a TTL is the dearest write, so a grant whose bucket is full again before
-- the key's TTL ends rewrites the value in place (SETRANGE keeps the TTL); only otherwise
-- does it SET the value with a TTL SLACK_MS beyond the time it is full, which a busy key
-- then needs about once per SLACK_MS.
-- Returns: "t" 0 granted, or the retry-after in ns (>= 1); "a" whole tokens; "f" 1 when
-- the key was short of full, 0 when it was full (absent, or refilled but not expired).
-- Redis before 5 replicates scripts verbatim, which TIME before a write forbids.
if redis.replicate_commands then redis.replicate_commands() end

local mode, n, tokens, period, burst = struct.unpack('<c1dddd', ARGV[1])

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
local SLACK_MS = 1000
local st = redis.call('GET', KEYS[1])
if st and #st ~= 40 then st = false end

if mode == 'f' then
    -- a key lives until some time after it is full again (up to SLACK_MS): short of
    -- full is judged by its own rate, the one it was written with
    if not st then return 0 end
    redis.call('DEL', KEYS[1])
    local m, l, _, r = struct.unpack('<ddddd', st)
    if now <= l or (now - l) * 1000 < ceil_div(m, r) then return 1 end
    return 0
end
local depth = burst * period
local missing, expires = 0, 0
if st then
    local last, p, _
    missing, last, p, _, expires = struct.unpack('<ddddd', st)
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
    return ceil_div(after - depth, tokens)
end
-- full again after ceil(after / tokens) ns, at `full` us; 1 ms of margin covers the
-- difference between TIME and the clock the server expires keys by
local full = now + ceil_div(ceil_div(after, tokens), 1000)
if expires >= full + 1000 then
    redis.call('SETRANGE', KEYS[1], '0', struct.pack('<ddddd', after, now, period, tokens, expires))
    return 0
end
local ttl = ceil_div(full - now, 1000) + SLACK_MS -- ms
redis.call('SET', KEYS[1], struct.pack('<ddddd', after, now, period, tokens, now + ttl * 1000),
    'PX', ttl)
return 0
