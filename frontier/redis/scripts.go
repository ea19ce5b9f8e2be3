package redis

import goredis "github.com/redis/go-redis/v9"

// The host scripts run on one host's keys, which share a hash tag and so
// one Redis Cluster slot:
//
//	KEYS[1] jobs   hash: padded per-host sequence -> job record
//	KEYS[2] due    zset: queued and parked jobs by due time (ms)
//	KEYS[3] lease  zset: leased jobs by lease expiry (ms)
//	KEYS[4] fin    zset: done and abandoned jobs by sequence
//	KEYS[5] cnt    hash: counts by state, "ab:<reason>", "seq", "v"
//	KEYS[6] keys   hash: "<method> <normalised URL>" -> padded sequence
//
// A job record is its fields joined by \31 (unit separator): state, seq,
// attempts, due ms, lease ms, status, reason, url, method, exit, result.
// Every host script returns {..., next, v}: when the host next has
// claimable work (ms, -1 for no unfinished job) and its version, which
// increases with every change, so that the crawl-wide schedule (sched.go)
// keeps the latest report whatever order reports arrive in.
const hostLib = `
local function dec(s)
  local t = {}
  for f in string.gmatch(s .. "\31", "([^\31]*)\31") do t[#t+1] = f end
  return t
end
local function enc(t)
  if t[12] == nil then t[12] = '' end
  return table.concat(t, "\31", 1, 12)
end
local function nxt()
  local a = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  local b = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  local m = -1
  if a[2] then m = tonumber(a[2]) end
  if b[2] then
    local v = tonumber(b[2])
    if m < 0 or v < m then m = v end
  end
  return m
end
local function ver() return redis.call('HINCRBY', KEYS[5], 'v', 1) end
local names = {'queued', 'leased', 'parked', 'done', 'abandoned'}
local function move(from, to)
  if from == to then return end
  redis.call('HINCRBY', KEYS[5], names[from], -1)
  redis.call('HINCRBY', KEYS[5], names[to], 1)
end
local function fmt(n) return string.format('%d', n) end
`

// push: ARGV = n, then n times: dedupe key, "url\31method\31exit\31\31extra"
// (extra: the job's headers and metadata, JSON, or empty), due ms.
var pushScript = goredis.NewScript(hostLib + `
local n = tonumber(ARGV[1])
local added = 0
for k = 0, n - 1 do
  local dk, rest, due = ARGV[2 + 3*k], ARGV[3 + 3*k], ARGV[4 + 3*k]
  if redis.call('HEXISTS', KEYS[6], dk) == 0 then
    local id = string.format('%010d', redis.call('HINCRBY', KEYS[5], 'seq', 1))
    redis.call('HSET', KEYS[6], dk, id)
    redis.call('HSET', KEYS[1], id, '1\31' .. '0\31' .. '0\31' .. due .. '\31' .. '0\31' .. '0\31' .. '\31' .. rest .. '\31')
    redis.call('ZADD', KEYS[2], due, id)
    added = added + 1
  end
end
if added > 0 then redis.call('HINCRBY', KEYS[5], 'queued', added) end
return {added, nxt(), ver()}
`)

// claim: ARGV = now ms, max, lease until ms. Returns {id, record, ...,
// next, v}: due jobs first by due time then sequence, expired leases
// merged in by their expiry.
var claimScript = goredis.NewScript(hostLib + `
local now, max, untl = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local a = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'WITHSCORES', 'LIMIT', 0, max)
local b = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'WITHSCORES', 'LIMIT', 0, max)
local out = {}
local i, j = 1, 1
while #out < 2*max and (a[i] or b[j]) do
  local id, from
  if a[i] and (not b[j] or tonumber(a[i+1]) < tonumber(b[j+1]) or (tonumber(a[i+1]) == tonumber(b[j+1]) and a[i] < b[j])) then
    id, from = a[i], KEYS[2]
    i = i + 2
  else
    id, from = b[j], KEYS[3]
    j = j + 2
  end
  local t = dec(redis.call('HGET', KEYS[1], id))
  redis.call('ZREM', from, id)
  move(tonumber(t[1]), 2)
  t[1] = '2'
  t[2] = fmt(tonumber(t[2]) + 1)
  t[4] = '0'
  t[5] = untl
  local rec = enc(t)
  redis.call('HSET', KEYS[1], id, rec)
  redis.call('ZADD', KEYS[3], untl, id)
  out[#out+1] = id
  out[#out+1] = rec
end
out[#out+1] = fmt(nxt())
out[#out+1] = fmt(ver())
return out
`)

// settle: ARGV = op, id, seq, force, then the op's arguments:
//
//	done     status, result
//	retry    due ms, charge (0/1), status, reason
//	park     due ms, status, reason
//	abandon  status, reason
//	release
//	extend   until ms
//
// Returns {code, next, v}: code 0 ok, 1 not found, 2 lease lost. With
// force (journal replay) a done or abandon lands on any unfinished job
// whatever its lease: an answer the fleet already has is not fetched again.
var settleScript = goredis.NewScript(hostLib + `
local op, id, seq, force = ARGV[1], ARGV[2], ARGV[3], ARGV[4] == '1'
local raw = redis.call('HGET', KEYS[1], id)
if not raw then return {1, nxt(), 0} end
local t = dec(raw)
local st = tonumber(t[1])
if st == 4 or st == 5 then
  if force then return {0, nxt(), 0} end
  return {2, nxt(), 0}
end
if not (st == 2 and t[2] == seq) and not (force and (op == 'done' or op == 'abandon')) then
  return {2, nxt(), 0}
end
redis.call('ZREM', KEYS[2], id)
redis.call('ZREM', KEYS[3], id)
if op == 'extend' then
  t[5] = ARGV[5]
  redis.call('ZADD', KEYS[3], ARGV[5], id)
  redis.call('HSET', KEYS[1], id, enc(t))
  return {0, nxt(), ver()}
end
t[4], t[5] = '0', '0'
if op == 'done' then
  move(st, 4)
  t[1], t[3], t[6], t[11] = '4', fmt(tonumber(t[3]) + 1), ARGV[5], ARGV[6]
  redis.call('ZADD', KEYS[4], tonumber(id), id)
elseif op == 'abandon' then
  move(st, 5)
  t[1], t[3], t[6], t[7] = '5', fmt(tonumber(t[3]) + 1), ARGV[5], ARGV[6]
  redis.call('HINCRBY', KEYS[5], 'ab:' .. ARGV[6], 1)
  redis.call('ZADD', KEYS[4], tonumber(id), id)
elseif op == 'retry' then
  move(st, 1)
  t[1], t[4], t[6], t[7] = '1', ARGV[5], ARGV[7], ARGV[8]
  if ARGV[6] == '1' then t[3] = fmt(tonumber(t[3]) + 1) end
  redis.call('ZADD', KEYS[2], ARGV[5], id)
elseif op == 'park' then
  move(st, 3)
  t[1], t[4], t[6], t[7] = '3', ARGV[5], ARGV[6], ARGV[7]
  redis.call('ZADD', KEYS[2], ARGV[5], id)
elseif op == 'release' then
  move(st, 1)
  t[1] = '1'
  redis.call('ZADD', KEYS[2], 0, id)
end
redis.call('HSET', KEYS[1], id, enc(t))
return {0, nxt(), ver()}
`)

// extendMany: ARGV = until ms, then id, seq pairs: every lease of the list
// still held under that seq moves to until. Returns {extended, next, v,
// then the 0-based index in the list of each pair whose lease is no longer
// held under its seq: the job was settled, or claimed again by another}.
var extendManyScript = goredis.NewScript(hostLib + `
local untl = ARGV[1]
local n = 0
local out = {0, 0, 0}
for k = 2, #ARGV, 2 do
  local id, seq = ARGV[k], ARGV[k+1]
  local raw = redis.call('HGET', KEYS[1], id)
  local kept = false
  if raw then
    local t = dec(raw)
    if t[1] == '2' and t[2] == seq then
      t[5] = untl
      redis.call('HSET', KEYS[1], id, enc(t))
      redis.call('ZADD', KEYS[3], untl, id)
      n = n + 1
      kept = true
    end
  end
  if not kept then
    table.insert(out, (k - 2) / 2)
  end
end
out[1], out[2], out[3] = n, nxt(), ver()
return out
`)

// recover: ARGV = now ms: every leased job is queued again, due now.
var recoverScript = goredis.NewScript(hostLib + `
local ids = redis.call('ZRANGE', KEYS[3], 0, -1)
for _, id in ipairs(ids) do
  local t = dec(redis.call('HGET', KEYS[1], id))
  move(2, 1)
  t[1], t[4], t[5] = '1', ARGV[1], '0'
  redis.call('HSET', KEYS[1], id, enc(t))
  redis.call('ZADD', KEYS[2], ARGV[1], id)
end
redis.call('DEL', KEYS[3])
return {#ids, nxt(), ver()}
`)

// peek: {next, v} without a change (v is read, not bumped).
var peekScript = goredis.NewScript(hostLib + `
return {nxt(), tonumber(redis.call('HGET', KEYS[5], 'v') or '0')}
`)

// The crawl-wide scripts run on the crawl's own keys (one slot):
//
//	KEYS[1] sched   zset: host -> when it next has claimable work (ms)
//	KEYS[2] ver     hash: host -> version of the report sched holds
//	KEYS[3] order   zset: host -> when it was last served, as a counter:
//	                least recently served first among hosts with work due
//
// schedule: ARGV = quadruples host, next, v, served (1 = served now).
var scheduleScript = goredis.NewScript(`
for k = 1, #ARGV, 4 do
  local h, nx, v = ARGV[k], tonumber(ARGV[k+1]), tonumber(ARGV[k+2])
  if ARGV[k+3] == '1' then
    redis.call('ZADD', KEYS[3], redis.call('HINCRBY', KEYS[2], '#served', 1), h)
  end
  local cur = tonumber(redis.call('HGET', KEYS[2], h) or '-1')
  if v >= cur then
    redis.call('HSET', KEYS[2], h, v)
    if nx < 0 then
      redis.call('ZREM', KEYS[1], h)
    else
      redis.call('ZADD', KEYS[1], nx, h)
    end
  end
end
return 0
`)

// candidates: ARGV = now ms, limit: hosts the schedule says have work due,
// least recently served first (never served first of all, by name).
var candidatesScript = goredis.NewScript(`
local hs = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #hs == 0 then return {} end
local sc = redis.call('ZMSCORE', KEYS[3], unpack(hs))
local idx = {}
for i = 1, #hs do idx[i] = {hs[i], tonumber(sc[i]) or 0} end
table.sort(idx, function(a, b)
  if a[2] ~= b[2] then return a[2] < b[2] end
  return a[1] < b[1]
end)
local out = {}
for i = 1, #idx do out[i] = idx[i][1] end
return out
`)

// register: KEYS[1] hosts hash (name -> number), KEYS[2] names hash
// (number -> name, and "n": the last number). ARGV = host names. Returns
// their numbers.
var registerScript = goredis.NewScript(`
local out = {}
for k = 1, #ARGV do
  local n = redis.call('HGET', KEYS[1], ARGV[k])
  if not n then
    n = redis.call('HINCRBY', KEYS[2], 'n', 1)
    redis.call('HSET', KEYS[1], ARGV[k], n)
    redis.call('HSET', KEYS[2], n, ARGV[k])
  end
  out[k] = tonumber(n)
end
return out
`)

var allScripts = []*goredis.Script{pushScript, claimScript, settleScript, extendManyScript, recoverScript, peekScript, scheduleScript, candidatesScript, registerScript}
