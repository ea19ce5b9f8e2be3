// Package fleet splits a proxy pool's exits among the live workers of a
// crawl through Redis, so that each exit's lanes live in exactly one
// worker's limiter and a per-IP decision costs no round trip.
//
// Each worker heartbeats a membership lease (Config.TTL). Every exit goes
// to one live worker by rendezvous hashing with bounded loads (the highest
// hash of exit and worker among the workers whose share is not full: see
// rendezvous.Share), so shares are even and a join or a death moves few exits. A
// worker takes an exit only once its previous owner let go: the owner
// drops a moving exit from its limiter at once, keeps its lease for
// Config.Handover (requests it let go just before may still be on their
// way through the proxy), saves what its limiter learned and releases it;
// the new owner's lanes on it send first one interval at their pace after
// they got it (limit.Exit.Since), so the server sees the lane's pace
// across the move. A dead owner's exit lease expires
// within one TTL. What the limiters learned (limit.Learned, per host, and
// the lanes with a budget of their own) is kept in Redis and restored by
// the new owner.
//
// With more workers than exits, the extra workers own none: they stand by
// (Owned is empty) and take over exits when a worker leaves or dies.
package fleet

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/rendezvous"
)

// DefaultHandover is Config.Handover's default. A worker that gains an exit
// knows that its previous owner sent nothing through it for at least this
// long before letting go (a dead owner's lease outlives it by more).
const DefaultHandover = 500 * time.Millisecond

// Config configures a worker's membership.
type Config struct {
	// Crawl names the crawl. Required, no braces.
	Crawl string
	// ID names this worker; empty: host name, pid and a random suffix.
	ID string
	// Exits are the pool's exit IDs, the same list on every worker.
	Exits []string
	// Settings are what every worker of the crawl must agree on (flag name
	// -> value, e.g. "--host-rate" -> "3/s"): while workers are live, a
	// worker with another value is refused, as one with another exit list
	// is. A ceiling given to one worker alone held that worker only: the
	// others sent at 10/s a host meant to get 3/s.
	Settings map[string]string
	// TTL is the membership and exit lease: a worker silent this long is
	// dead and its exits move. Default 6s; heartbeats every TTL/3.
	TTL time.Duration
	// Handover is how long an exit that moves away stays unused before its
	// new owner may take it: the old owner's last requests reach the
	// server meanwhile (the new owner's lanes add their own interval on
	// top, limit.Exit.Since). Default 500ms. Every exit moved idles this
	// long: at 2 s, eight workers joining a second apart over 20 exits
	// cost about a tenth of the pool's first minute.
	Handover time.Duration
	// Even makes every member search its own hosts' limits (Leads is true
	// for each that owns exits) and the shares even (rendezvous.ShareEven:
	// no leader's extra exits). For a fleet of gateways, whose clients are
	// their own: the leader of a crawl's fleet searches every host for all,
	// and a gateway leader may send nothing to a host another gateway's
	// clients want, whose lanes then held half the first guess for good.
	// Every member of a fleet must give the same Even (Settings).
	Even bool
	// OnExits is called with the exits this worker owns whenever the set
	// changes (and once by Join), and how many workers the fleet had then
	// (1: this one alone, so nobody used the exits before it).
	OnExits func(owned []string, workers int)
	// Learned and Restore carry what this worker's limiter learned to and
	// from Redis (limit.Limiter.Learned and Restore). Either may be nil.
	Learned func(now time.Time) limit.Learned
	Restore func(s limit.Learned, now time.Time) (int, error)
	// OnRefused is called, once, when this worker comes back after its
	// membership lapsed (stopped, or cut off from Redis, past TTL) to a
	// crawl whose live workers now use another exit list or other
	// Settings (ErrExitsDiffer, ErrSettingsDiffer), or finds at a beat
	// that the crawl's record of them is another's (Redis lost it, and a
	// joiner wrote its own first): it has then given up
	// its exits (OnExits with none) and must stop. It rejoined without a
	// word: a worker stopped while another joined with --host-rate 5/s
	// sent as it pleased beside it, 26 requests a second to the host.
	OnRefused func(err error)
	// Logger receives membership changes. nil: discard.
	Logger *slog.Logger
}

// Fleet is one worker's membership. It is safe for concurrent use.
type Fleet struct {
	rdb goredis.UniversalClient
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	members  []string             // live workers, last heartbeat
	owned    []string             // exits this worker uses
	leaving  map[string]time.Time // exits dropped, released at the time
	lastBeat time.Time
	// rejoin: until then this worker keeps only the exits it holds (see
	// Beat), back from an outage longer than a lease.
	rejoin time.Time
	// leader is the worker that searches every host's per-IP limit: the
	// longest present that has exits (see Leads).
	leader string
	// waiting: exits of this worker's share were still held by their
	// previous owner at the last heartbeat.
	waiting bool
	// expecting: this worker holds less than its share, also while it
	// rejoins (after a lapse it takes back only what it holds, for a
	// lease): its exits come within a lease (Expecting).
	expecting bool
	// refused is why this worker may not rejoin (OnRefused); every Beat
	// after returns it.
	refused error
	joined  time.Time // when this run of the worker joined (Report)
}

// Join registers this worker, takes its share of the exits and calls
// OnExits. Run keeps the membership alive.
func Join(ctx context.Context, rdb goredis.UniversalClient, cfg Config) (*Fleet, error) {
	return join(ctx, rdb, cfg, time.Now())
}

// Check refuses, as Join would, a worker whose exit list or settings
// differ from those of the crawl's live workers (ErrExitsDiffer,
// ErrSettingsDiffer), or whose ID (cfg.ID, if set) a live worker
// heartbeats under (ErrIDInUse), without joining: a worker checks before it writes
// anything of its own (a refused joiner had loaded the frontier and
// written its results file first).
func Check(ctx context.Context, rdb goredis.UniversalClient, cfg Config) error {
	if cfg.Crawl == "" || strings.ContainsAny(cfg.Crawl, "{}") {
		return errors.New("fleet: crawl name: want a non-empty name without braces")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 6 * time.Second
	}
	f := &Fleet{rdb: rdb, cfg: cfg}
	if err := f.agrees(ctx, time.Now()); err != nil {
		return err
	}
	if cfg.ID == "" {
		return nil
	}
	// An ID a live worker heartbeats under (ErrIDInUse), before the
	// worker writes anything: refused at Join only, it had written its
	// results, crawl.json and journal in --out first.
	return f.ownID(ctx, time.Now())
}

// agrees checks this worker's exit list and settings against those of the
// crawl's live workers (sameExits, sameSettings), as Join, Check and a
// Beat after a lapse do.
func (f *Fleet) agrees(ctx context.Context, now time.Time) error {
	if err := f.sameExits(ctx, now); err != nil {
		return err
	}
	return f.sameSettings(ctx, now)
}

func join(ctx context.Context, rdb goredis.UniversalClient, cfg Config, now time.Time) (*Fleet, error) {
	if cfg.Crawl == "" || strings.ContainsAny(cfg.Crawl, "{}") {
		return nil, errors.New("fleet: crawl name: want a non-empty name without braces")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 6 * time.Second
	}
	if cfg.Handover <= 0 {
		cfg.Handover = DefaultHandover
	}
	if cfg.ID == "" {
		host, _ := os.Hostname()
		var b [3]byte
		_, _ = rand.Read(b[:])
		cfg.ID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	f := &Fleet{rdb: rdb, cfg: cfg, log: cfg.Logger, leaving: map[string]time.Time{}, joined: now}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	if err := f.agrees(ctx, now); err != nil {
		return nil, err
	}
	if err := f.ownID(ctx, now); err != nil {
		return nil, err
	}
	if err := f.Beat(ctx, now); err != nil {
		return nil, err
	}
	return f, nil
}

// ErrExitsDiffer: a worker's exit list is not the one the live workers of
// its crawl split. Each worker splits the exits by its own list: workers
// with different lists each left some exits to others that did not know
// them, and those stayed unused for the whole run.
var ErrExitsDiffer = errors.New("the exit list differs from the one the crawl's live workers use")

// exitsScript: ARGV = now ms, the list's fingerprint, its size. With live
// workers, a different fingerprint is refused (returns the one in use and
// its size); otherwise this list becomes the crawl's (returns nothing).
var exitsScript = goredis.NewScript(`
local now = tonumber(ARGV[1])
local live = redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')
local cur = redis.call('HMGET', KEYS[2], 'exits', 'n')
if live > 0 and cur[1] and cur[1] ~= ARGV[2] then return {cur[1], cur[2]} end
redis.call('HSET', KEYS[2], 'exits', ARGV[2], 'n', ARGV[3])
return {}
`)

// sameExits checks this worker's exit list against the one the crawl's
// live workers use, and records it when none is live.
func (f *Fleet) sameExits(ctx context.Context, now time.Time) error {
	ids := slices.Clone(f.cfg.Exits)
	slices.Sort(ids)
	sum := sha256.Sum256([]byte(strings.Join(ids, "\n")))
	fp := hex.EncodeToString(sum[:8])
	res, err := exitsScript.Run(ctx, f.rdb, []string{f.key("members"), f.key("pool")}, now.UnixMilli(), fp, len(ids)).StringSlice()
	if err != nil {
		return fmt.Errorf("fleet: exit list: %w", err)
	}
	if len(res) == 2 {
		return fmt.Errorf("fleet: crawl %q: %w (%d exits here, %s exits there): give every worker the same --proxies list", f.cfg.Crawl, ErrExitsDiffer, len(ids), res[1])
	}
	return nil
}

// ErrSettingsDiffer: a worker's settings (Config.Settings) are not those
// of the crawl's live workers.
var ErrSettingsDiffer = errors.New("a setting differs from the one the crawl's live workers use")

// settingsScript: KEYS[1] members, KEYS[2] pool; ARGV = now ms, then name,
// value pairs. With live workers, the first name whose value differs from
// the one recorded is refused (returns the name and the value in use);
// otherwise these values become the crawl's (returns nothing).
var settingsScript = goredis.NewScript(`
local now = tonumber(ARGV[1])
local live = redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')
if live > 0 then
  for i = 2, #ARGV, 2 do
    local cur = redis.call('HGET', KEYS[2], 'set:' .. ARGV[i])
    if cur and cur ~= ARGV[i + 1] then return {ARGV[i], cur} end
  end
end
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[2], 'set:' .. ARGV[i], ARGV[i + 1]) end
return {}
`)

// SettingCommand is the setting (Config.Settings) that names what the
// members are, a crawl's workers or gateways: checked before the others.
const SettingCommand = "command"

// sameSettings checks this worker's settings against those of the crawl's
// live workers, and records them when none is live.
func (f *Fleet) sameSettings(ctx context.Context, now time.Time) error {
	if len(f.cfg.Settings) == 0 {
		return nil
	}
	args := []any{now.UnixMilli()}
	names := slices.Sorted(maps.Keys(f.cfg.Settings))
	// What the members are (a crawl's workers or gateways) is checked
	// first: a gateway given a crawl's name was told to change its
	// --fleet-ttl, then its --host-rate, before hearing it could not join
	// at all.
	if i := slices.Index(names, SettingCommand); i > 0 {
		names = append(append([]string{SettingCommand}, names[:i]...), names[i+1:]...)
	}
	for _, name := range names {
		args = append(args, name, f.cfg.Settings[name])
	}
	res, err := settingsScript.Run(ctx, f.rdb, []string{f.key("members"), f.key("pool")}, args...).StringSlice()
	if err != nil {
		return fmt.Errorf("fleet: settings: %w", err)
	}
	if len(res) == 2 && res[0] == SettingCommand {
		return fmt.Errorf("fleet: crawl %q: %w: its live members are %q, this is %q: a fleet is of a crawl's workers or of gateways, not both; use another --crawl name",
			f.cfg.Crawl, ErrSettingsDiffer, res[1], f.cfg.Settings[SettingCommand])
	}
	if len(res) == 2 {
		say := func(v string) string {
			if v == "" {
				return "none"
			}
			return v
		}
		return fmt.Errorf("fleet: crawl %q: %w: %s is %s here, %s on the live workers: give every worker the same",
			f.cfg.Crawl, ErrSettingsDiffer, res[0], say(f.cfg.Settings[res[0]]), say(res[1]))
	}
	return nil
}

// ErrIDInUse: a live worker of the crawl already has this worker's ID.
var ErrIDInUse = errors.New("another live worker of the crawl has this worker's ID")

// ownID refuses an ID a live worker heartbeats under: two workers with one
// ID each took the other's exits for its own and sent through the same
// ones (17 requests in 1.94 s through one exit, 11% of them 429s). A
// member entry that stops moving is a dead worker's, this one restarted
// with its ID: it is taken over once a heartbeat has passed without it.
func (f *Fleet) ownID(ctx context.Context, now time.Time) error {
	score := func() (float64, bool, error) {
		v, err := f.rdb.ZScore(ctx, f.key("members"), f.cfg.ID).Result()
		if errors.Is(err, goredis.Nil) {
			return 0, false, nil
		}
		return v, err == nil, err
	}
	first, live, err := score()
	if err != nil {
		return fmt.Errorf("fleet: worker ID: %w", err)
	}
	if !live || first <= float64(now.UnixMilli()) {
		return nil
	}
	// Live by its lease: wait a heartbeat and a half for it to move.
	wait := f.cfg.TTL/3 + f.cfg.TTL/6
	select {
	case <-time.After(wait):
	case <-ctx.Done():
		return ctx.Err()
	}
	again, live, err := score()
	if err != nil {
		return fmt.Errorf("fleet: worker ID: %w", err)
	}
	if live && again > first {
		return fmt.Errorf("fleet: crawl %q: %w (%s): give each worker its own --worker-id", f.cfg.Crawl, ErrIDInUse, f.cfg.ID)
	}
	return nil
}

// ID returns this worker's name.
func (f *Fleet) ID() string { return f.cfg.ID }

func (f *Fleet) key(name string) string { return "eg:{" + f.cfg.Crawl + "}:" + name }

// Keys: members (zset worker -> lease expiry ms), owners (hash exit ->
// worker), until (hash exit -> lease expiry ms), learned (hash host ->
// limit.LearnedHost JSON), workers (hash worker -> JSON status), joined
// (zset worker -> first heartbeat ms); and pool (hash: the exit list's
// fingerprint and size, sameExits).
func keys(crawl string) []string {
	p := "eg:{" + crawl + "}:"
	return []string{p + "members", p + "owners", p + "until", p + "learned", p + "workers", p + "joined"}
}

// beatScript: ARGV = me, now ms, ttl ms, rank kept ms. Renews me and
// drops the dead (their exit leases run out on their own; their rank is
// kept a while, rankKept). Returns the live workers, the longest present
// first. A worker's first heartbeat ranks it after every
// worker already there, even within the same millisecond: ties would rank
// by name, and the lead (Leads) would go to a later worker named before
// the first (8 workers started at once: w1 took the lead w6 had begun).
var beatScript = goredis.NewScript(`
local now = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
if not redis.call('ZSCORE', KEYS[6], ARGV[1]) then
  local at, last = now, redis.call('ZRANGE', KEYS[6], -1, -1, 'WITHSCORES')
  if last[2] and tonumber(last[2]) >= at then at = tonumber(last[2]) + 1 end
  redis.call('ZADD', KEYS[6], at, ARGV[1])
end
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
for _, w in ipairs(dead) do redis.call('HDEL', KEYS[5], w) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[4]))
local live = {}
for _, w in ipairs(redis.call('ZRANGE', KEYS[6], 0, -1)) do
  local lease = redis.call('ZSCORE', KEYS[1], w)
  if not lease then redis.call('ZREM', KEYS[6], w) elseif tonumber(lease) > now then live[#live+1] = w end
end
return live
`)

// rankKept is how long a worker whose lease ran out keeps its rank among
// the crawl's workers (its place in joined, which decides the lead), in
// leases: after an outage longer than a lease every lease has run out,
// and the first worker back dropped every other from the ranks, took the
// lead, and restarted every host's search (3 429s more on the one host in
// a traced run of TestRedisFaults/KillDuringOutage). Dead longer, it is a
// newcomer again.
const rankKept = 10

// takeScript: ARGV = me, now ms, ttl ms, then "+exit" (want) or "-exit"
// (release). Takes each wanted exit that is free or mine, renewing its
// lease; releases the others if mine. Returns the exits held.
var takeScript = goredis.NewScript(`
local me, now, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local held = {}
for k = 4, #ARGV do
  local op, e = string.sub(ARGV[k], 1, 1), string.sub(ARGV[k], 2)
  local owner = redis.call('HGET', KEYS[2], e)
  local untl = tonumber(redis.call('HGET', KEYS[3], e) or '0')
  if op == '+' then
    if not owner or owner == me or untl <= now then
      redis.call('HSET', KEYS[2], e, me)
      redis.call('HSET', KEYS[3], e, now + ttl)
      held[#held+1] = e
    end
  elseif owner == me then
    redis.call('HDEL', KEYS[2], e)
    redis.call('HDEL', KEYS[3], e)
  end
end
return held
`)

// Beat is one heartbeat at now: renew membership, recompute the share,
// take free exits of it, release exits handed over. Run calls it every
// TTL/3; an error leaves the owned set as it was (a worker keeps its lanes
// while Redis is away).
//
// Leases are times, and an outage longer than a lease (Redis killed and
// restarted, or stopped) lets every membership and exit lease run out
// meanwhile, though every worker kept sending through its exits. The first
// worker back then saw itself alone, took every exit, and sent through
// the others' while they still did, until their own next heartbeat: two
// workers on one exit (TestOutageNoTakeover). So a worker back from an
// outage longer than a lease keeps only the exits it holds for one lease,
// the time every live worker takes to beat again, and the lead where it
// was (every worker keeps its rank meanwhile: rankKept); then the shares
// and the lead are worked out anew and exits move with their handover as
// usual (a dead worker's with them).
func (f *Fleet) Beat(ctx context.Context, now time.Time) error {
	f.mu.Lock()
	refused, beaten := f.refused, !f.lastBeat.IsZero()
	f.mu.Unlock()
	if refused != nil {
		return refused
	}
	if beaten { // (Join checked before its first beat)
		// Every beat checks the exit list and the settings again, and
		// records them where Redis lost them (restarted empty, flushed):
		// the next joiner was checked against nothing and wrote its own,
		// another --host-rate, another list whose new exit nobody took.
		// A worker back from a lapse may find that the live workers
		// agreed on another list or other settings meanwhile, which Join
		// would have refused; and one may find another's record (a
		// joiner came in the moment before its beat). Either stops: two
		// records never run side by side.
		if err := f.agrees(ctx, now); errors.Is(err, ErrExitsDiffer) || errors.Is(err, ErrSettingsDiffer) {
			f.refuse(ctx, err)
			return err
		} else if err != nil {
			return err
		}
	}
	ks := keys(f.cfg.Crawl)
	nowMs, ttlMs := now.UnixMilli(), f.cfg.TTL.Milliseconds()
	members, err := beatScript.Run(ctx, f.rdb, ks, f.cfg.ID, nowMs, ttlMs, rankKept*ttlMs).StringSlice()
	if err != nil {
		return fmt.Errorf("fleet: heartbeat: %w", err)
	}
	want := f.share(members, f.cfg.ID)
	share := len(want) // before a rejoin keeps it to what this worker holds
	f.mu.Lock()
	prev := slices.Clone(f.owned)
	if !f.lastBeat.IsZero() && now.Sub(f.lastBeat) > f.cfg.TTL {
		f.rejoin = now.Add(f.cfg.TTL)
		f.log.Info("fleet: back after an outage longer than a lease: keeping only this worker's exits while the others come back", "worker", f.cfg.ID, "for", f.cfg.TTL)
	}
	if now.Before(f.rejoin) {
		want = slices.DeleteFunc(want, func(e string) bool { return !slices.Contains(prev, e) })
	}
	var args []any
	args = append(args, f.cfg.ID, nowMs, ttlMs)
	for _, e := range want {
		args = append(args, "+"+e)
	}
	// Exits that move away: out of use at once, released after Handover.
	for _, e := range prev {
		if !slices.Contains(want, e) {
			if _, ok := f.leaving[e]; !ok {
				f.leaving[e] = now.Add(f.cfg.Handover)
			}
		}
	}
	var release []string
	for e, at := range f.leaving {
		switch {
		case slices.Contains(want, e):
			delete(f.leaving, e) // it came back
		case !now.Before(at):
			release = append(release, e)
			args = append(args, "-"+e)
		default:
			args = append(args, "+"+e) // keep its lease until the handover ends
		}
	}
	f.mu.Unlock()
	if len(release) > 0 {
		f.saveLearned(ctx, now) // the new owner restores it
	}
	held, err := takeScript.Run(ctx, f.rdb, ks, args...).StringSlice()
	if err != nil {
		return fmt.Errorf("fleet: exits: %w", err)
	}
	var owned []string
	for _, e := range held {
		if slices.Contains(want, e) {
			owned = append(owned, e)
		}
	}
	slices.Sort(owned)
	f.mu.Lock()
	for _, e := range release {
		delete(f.leaving, e)
	}
	gained := slices.DeleteFunc(slices.Clone(owned), func(e string) bool { return slices.Contains(prev, e) })
	changed := !slices.Equal(owned, f.owned)
	f.members, f.owned, f.lastBeat = members, owned, now
	if !now.Before(f.rejoin) {
		// (While the others come back, the lead stays where it was.)
		f.leader = f.leaderOf(members)
	}
	f.waiting = len(owned) < len(want)
	f.expecting = len(owned) < share
	f.mu.Unlock()
	if len(gained) > 0 {
		f.restoreLearned(ctx, now)
	}
	if changed {
		f.log.Info("fleet: exits", "worker", f.cfg.ID, "workers", len(members), "owned", len(owned), "gained", len(gained))
		if f.cfg.OnExits != nil {
			f.cfg.OnExits(slices.Clone(owned), max(1, len(members)))
		}
	}
	return nil
}

// Leads reports whether this worker searches host's per-IP limit for every
// worker (limit.HostShare's Leads): the one longest in the fleet that has
// exits leads every host, once it holds its exits (while they are handed
// over, no worker leads: the others' lanes keep the pace they hold). A
// worker that joins does not take the lead: a search handed over at every
// join (workers start a second or two apart) restarts on an exit another
// worker used a moment before, where its first request is pushed back and
// reads nothing, while every follower's pace waits on it. The lead moves
// only when its worker leaves or dies.
func (f *Fleet) Leads(host string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return (f.cfg.Even || f.leader == f.cfg.ID) && len(f.owned) > 0
}

// share is member me's share of the exits among members: with a leader's
// extra exits, or even (Config.Even).
func (f *Fleet) share(members []string, me string) []string {
	if f.cfg.Even {
		return rendezvous.ShareEven(f.cfg.Exits, members, me)
	}
	return rendezvous.Share(f.cfg.Exits, members, me)
}

// leaderOf is the first of members (the longest present first) whose share
// of exits is not empty: the first itself whenever the pool has exits
// (rendezvous.Share gives it its share rounded up, or three exits while
// every other worker can still hold one, so that its search has lanes to
// pass to while others wait out long Retry-Afters, and it never stands by
// where the workers outnumber the exits).
func (f *Fleet) leaderOf(members []string) string {
	for _, m := range members {
		if len(f.share(members, m)) > 0 {
			return m
		}
	}
	return ""
}

// Run heartbeats every TTL/3 and saves what the limiter learned every
// few heartbeats, until ctx ends; then it leaves (Leave).
func (f *Fleet) Run(ctx context.Context) {
	t := time.NewTimer(f.nextBeat(time.Now()))
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			lctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			f.Leave(lctx)
			cancel()
			return
		case <-t.C:
		}
		if err := f.Beat(ctx, time.Now()); err != nil {
			f.mu.Lock()
			refused := f.refused != nil
			f.mu.Unlock()
			if refused {
				return // given up (OnRefused)
			}
			f.log.Warn("fleet: heartbeat failed; keeping the exits owned", "err", err)
			t.Reset(f.cfg.TTL / 3)
			continue
		}
		if now := time.Now(); now.Sub(last) >= f.cfg.TTL {
			f.saveLearned(ctx, now)
			last = now
		}
		t.Reset(f.nextBeat(time.Now()))
	}
}

// moveBeat is how soon Run beats again while exits move: a moving exit is
// idle from the moment its owner drops it until the new owner takes it, and
// waiting a whole TTL/3 at each end of the handover would add up to two
// of them to it.
const moveBeat = 200 * time.Millisecond

// nextBeat is how long Run waits for the next heartbeat: TTL/3; until the
// next handover of this worker's ends, if sooner; moveBeat while exits of
// its share are still held by their previous owner.
func (f *Fleet) nextBeat(now time.Time) time.Duration {
	d := f.cfg.TTL / 3
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, at := range f.leaving {
		d = min(d, max(at.Sub(now), time.Millisecond))
	}
	if f.waiting {
		d = min(d, moveBeat)
	}
	return d
}

// refuse gives up this worker's exits and membership for good: it came
// back to a crawl its live workers now run otherwise (Beat).
func (f *Fleet) refuse(ctx context.Context, err error) {
	f.log.Error("fleet: the crawl's live workers run it otherwise (back after its membership lapsed, or Redis lost the crawl's record and another worker wrote its own): giving up its exits and stopping", "worker", f.cfg.ID, "err", err)
	f.mu.Lock()
	f.refused = err
	f.mu.Unlock()
	f.Leave(ctx)
	if f.cfg.OnExits != nil {
		f.cfg.OnExits(nil, 1)
	}
	if f.cfg.OnRefused != nil {
		f.cfg.OnRefused(err)
	}
}

// Leave saves what the limiter learned, releases this worker's exits and
// membership, so that the others take them over at their next heartbeat.
func (f *Fleet) Leave(ctx context.Context) {
	f.saveLearned(ctx, time.Now())
	f.mu.Lock()
	args := []any{f.cfg.ID, time.Now().UnixMilli(), f.cfg.TTL.Milliseconds()}
	for _, e := range f.cfg.Exits {
		args = append(args, "-"+e)
	}
	f.owned = nil
	f.mu.Unlock()
	ks := keys(f.cfg.Crawl)
	_ = takeScript.Run(ctx, f.rdb, ks, args...).Err()
	_ = f.rdb.ZRem(ctx, ks[0], f.cfg.ID).Err()
	_ = f.rdb.ZRem(ctx, ks[5], f.cfg.ID).Err()
	_ = f.rdb.HDel(ctx, ks[4], f.cfg.ID).Err()
}

// Owned returns the exits this worker uses now.
func (f *Fleet) Owned() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.owned)
}

// Expecting reports whether exits of this worker's share are still held
// by others at the last heartbeat (a join, a handover, a restart of
// Redis): they come within a lease. A worker with no share (more workers
// than exits) expects none.
func (f *Fleet) Expecting() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.expecting
}

// Exits returns the size of the pool the workers share out.
func (f *Fleet) Exits() int { return len(f.cfg.Exits) }

// Workers returns the number of live workers at the last heartbeat (at
// least 1).
func (f *Fleet) Workers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return max(1, len(f.members))
}

func (f *Fleet) saveLearned(ctx context.Context, now time.Time) {
	if f.cfg.Learned == nil {
		return
	}
	l := f.cfg.Learned(now)
	if len(l.Hosts) == 0 {
		return
	}
	vals := make([]any, 0, 2*len(l.Hosts))
	for _, h := range l.Hosts {
		if h.OnlyWaits() {
			// One worker's lanes' waits, no rate: stored under the
			// host's name it would overwrite the record the host's
			// leader keeps there.
			continue
		}
		b, err := json.Marshal(h)
		if err == nil {
			vals = append(vals, h.Host, string(b))
		}
	}
	if len(vals) == 0 {
		return
	}
	if err := f.rdb.HSet(ctx, keys(f.cfg.Crawl)[3], vals...).Err(); err != nil {
		f.log.Warn("fleet: learned state not saved", "err", err)
	}
}

func (f *Fleet) restoreLearned(ctx context.Context, now time.Time) {
	if f.cfg.Restore == nil {
		return
	}
	m, err := f.rdb.HGetAll(ctx, keys(f.cfg.Crawl)[3]).Result()
	if err != nil {
		f.log.Warn("fleet: learned state not read", "err", err)
		return
	}
	s := limit.Learned{Saved: now}
	for _, v := range m {
		var h limit.LearnedHost
		if json.Unmarshal([]byte(v), &h) == nil {
			s.Hosts = append(s.Hosts, h)
		}
	}
	if _, err := f.cfg.Restore(s, now); err != nil {
		f.log.Warn("fleet: learned state", "err", err)
	}
}

// Report publishes this worker's figures for Status (any JSON value).
func (f *Fleet) Report(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	// Kept apart too, under this run of the worker, past its death: a
	// crawl's status summed the live workers' alone (its total fell by a
	// killed worker's 60 requests, and read 0 once every worker ended).
	pipe := f.rdb.Pipeline()
	pipe.HSet(ctx, keys(f.cfg.Crawl)[4], f.cfg.ID, string(b))
	pipe.HSet(ctx, runsKey(f.cfg.Crawl), f.cfg.ID+"|"+f.joined.UTC().Format(time.RFC3339Nano), string(b))
	_, err = pipe.Exec(ctx)
	return err
}

// runsKey is the hash of every worker run's last report (Report), worker
// ID and start -> report.
func runsKey(crawl string) string { return "eg:{" + crawl + "}:runs" }

// RunReports returns the last report of every run of every worker of the
// crawl, live or not (Report).
func RunReports(ctx context.Context, rdb goredis.UniversalClient, crawl string) ([]json.RawMessage, error) {
	vs, err := rdb.HVals(ctx, runsKey(crawl)).Result()
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(vs))
	for i, v := range vs {
		out[i] = json.RawMessage(v)
	}
	return out, nil
}

// Member is one live worker as Status sees it.
type Member struct {
	ID     string          `json:"id"`
	Until  time.Time       `json:"lease_until"`
	Exits  []string        `json:"exits"`
	Report json.RawMessage `json:"report,omitempty"`
}

// Status returns the live workers of a crawl, the exits each owns and what
// each last reported.
func Status(ctx context.Context, rdb goredis.UniversalClient, crawl string) ([]Member, error) {
	ks := keys(crawl)
	zs, err := rdb.ZRangeWithScores(ctx, ks[0], 0, -1).Result()
	if err != nil {
		return nil, err
	}
	owners, err := rdb.HGetAll(ctx, ks[1]).Result()
	if err != nil {
		return nil, err
	}
	until, err := rdb.HGetAll(ctx, ks[2]).Result()
	if err != nil {
		return nil, err
	}
	reports, err := rdb.HGetAll(ctx, ks[4]).Result()
	if err != nil {
		return nil, err
	}
	now := time.Now().UnixMilli()
	var out []Member
	for _, z := range zs {
		id, _ := z.Member.(string)
		if int64(z.Score) <= now {
			continue
		}
		m := Member{ID: id, Until: time.UnixMilli(int64(z.Score))}
		for e, w := range owners {
			if u, _ := strconv.ParseInt(until[e], 10, 64); w == id && u > now {
				m.Exits = append(m.Exits, e)
			}
		}
		slices.Sort(m.Exits)
		if r, ok := reports[id]; ok {
			m.Report = json.RawMessage(r)
		}
		out = append(out, m)
	}
	return out, nil
}
