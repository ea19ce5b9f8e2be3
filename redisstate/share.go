// Package redisstate shares a host's limiter state between the workers of
// a crawl through Redis: it implements limit.HostShare with small atomic
// scripts, one round trip each, on keys hash-tagged by host so that they
// work on Redis Cluster.
//
// Round trips: a request to a host with a politeness ceiling, or while the
// host limits site-wide (its own rate governs), costs one (Admit: the
// shared GCRA schedule and pause). Any other request costs none: lanes are
// the worker's own. A 429, a 503 or a scope change costs one more
// (Publish). A refresh loop reads the views of the hosts in use, in one
// pipelined round trip every Config.Refresh.
//
// When Redis cannot be reached, Admit never fails open: it paces each host
// locally at its ceiling (and rate) divided by the last known number of
// workers, and honours the last pause it knew, until Redis answers again.
package redisstate

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/exitgate/exitgate/limit"
)

// Config configures a Share.
type Config struct {
	// Crawl names the crawl whose workers share state. Required, no braces.
	Crawl string
	// Workers reports the number of live workers, for the share of a
	// ceiling each takes while Redis is unreachable. nil: 1.
	Workers func() int
	// Exits reports how many exits the workers hold together (the
	// crawl's pool; limit.HostShare's Exits), 0 when not known. nil: not
	// known.
	Exits func() int
	// Refresh is how often Run reads the shared views of the hosts in
	// use. Default 500ms.
	Refresh time.Duration
	// Timeout bounds one call to Redis before the local fallback answers.
	// Default 250ms.
	Timeout time.Duration
	// Leads reports whether this worker searches host's per-IP limit for
	// the crawl (limit.HostShare.Leads; the fleet gives each host's lead to
	// the owner of one exit). nil: every worker searches on its own.
	Leads func(host string) bool
	// Logger receives outage notices. nil: discard.
	Logger *slog.Logger
}

// Share is a limit.HostShare on Redis. It is safe for concurrent use.
type Share struct {
	rdb goredis.UniversalClient
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	views   map[string]*entry
	down    bool
	upAt    time.Time // when Redis last answered again after being down
	workers int       // last known, at least 1
	stats   Stats
}

type entry struct {
	view limit.HostView
	has  bool
	used time.Time // last View or Admit
	// The local fallback's schedule while Redis is unreachable.
	sched limit.Schedule
	// unsent: published while Redis was unreachable, so Redis has not
	// seen it; the view is sent when Redis answers again, before it is
	// read back, or the stale state Redis kept (a restart restores what it
	// had) would overwrite it. A leader's follow pace is published once per
	// change: lost, its followers would hold the old one for good.
	unsent   bool
	unsentEv []limit.Evidence
	// changes counts what marked the entry unsent, so that sendUnsent
	// clears only what it sent: a Publish while it was sending (Redis back,
	// the Share still down) was cleared with the older view, never sent.
	changes int64
}

// markUnsent marks e's view as not sent to Redis yet, counting the change
// (sendUnsent clears only what it sent).
func (e *entry) markUnsent() {
	e.unsent = true
	e.changes++
}

// Stats counts a Share's calls, for the round-trip figures.
type Stats struct {
	Admits, Publishes, Refreshes, Fallbacks int64
}

// New returns a Share for cfg.Crawl on rdb. Run refreshes its views.
func New(rdb goredis.UniversalClient, cfg Config) (*Share, error) {
	if cfg.Crawl == "" || strings.ContainsAny(cfg.Crawl, "{}") {
		return nil, errors.New("redisstate: crawl name: want a non-empty name without braces")
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 500 * time.Millisecond
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 250 * time.Millisecond
	}
	s := &Share{rdb: rdb, cfg: cfg, log: cfg.Logger, views: map[string]*entry{}, workers: 1}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

func (s *Share) keys(host string) []string {
	tag := strings.NewReplacer("{", "%7B", "}", "%7D").Replace(host)
	p := "eg:{" + s.cfg.Crawl + "|" + tag + "}:"
	return []string{p + "share", p + "ev"}
}

func us(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromUs(v int64) time.Time {
	if v <= 0 {
		return time.Time{}
	}
	return time.UnixMicro(v)
}

// admitScript: KEYS[1] the host's share hash. ARGV = now µs, ceiling
// req/s, rate req/s. The ceiling and the rate are each a GCRA schedule
// (theoretical arrival times ctat, rtat) with a tolerance of a tenth of an
// interval, at most 2 ms; the pause gates both. Returns {1, 0} or {0,
// when}.
var admitScript = goredis.NewScript(`
local now, ceil, rate = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local st = redis.call('HMGET', KEYS[1], 'ctat', 'rtat', 'pause')
local ctat, rtat, pause = tonumber(st[1]) or 0, tonumber(st[2]) or 0, tonumber(st[3]) or 0
local wait = 0
if pause > now then wait = pause end
local function tol(iv) return math.min(math.floor(iv / 10), 2000) end
local civ, riv = 0, 0
if ceil > 0 then
  civ = math.floor(1e6 / ceil)
  local r = ctat - civ - tol(civ)
  if r > wait then wait = r end
end
if rate > 0 then
  riv = math.floor(1e6 / rate)
  local r = rtat - riv - tol(riv)
  if r > wait then wait = r end
end
if wait > now then return {0, string.format('%d', wait)} end
if civ > 0 then redis.call('HSET', KEYS[1], 'ctat', string.format('%d', math.max(ctat, now) + civ)) end
if riv > 0 then redis.call('HSET', KEYS[1], 'rtat', string.format('%d', math.max(rtat, now) + riv)) end
redis.call('PEXPIRE', KEYS[1], 86400000)
return {1, '0'}
`)

// publishScript: KEYS[1] share hash, KEYS[2] evidence list. ARGV = pause
// µs, scope, rate, rate ceiling, rate floor, cut µs, follow, follow µs,
// follow declared (0 or 1), the first run's count awaited with it, the
// sliding counter's edge read with it (µs, 0 = none), the window its
// lanes count over (µs, 0 = none), then evidence JSON entries. A later pause
// wins; a newer cut wins; a newer follow wins; a shared scope is kept; the
// evidence list keeps the newest 32.
var publishScript = goredis.NewScript(`
local pause, scope, cut, fat = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[6]), tonumber(ARGV[8])
local st = redis.call('HMGET', KEYS[1], 'pause', 'cut', 'fat')
if pause > (tonumber(st[1]) or 0) then redis.call('HSET', KEYS[1], 'pause', ARGV[1]) end
if scope > 0 then redis.call('HSET', KEYS[1], 'scope', ARGV[2]) end
if cut > (tonumber(st[2]) or 0) then
  redis.call('HSET', KEYS[1], 'cut', ARGV[6], 'rate', ARGV[3], 'hi', ARGV[4], 'lo', ARGV[5])
end
if fat > (tonumber(st[3]) or 0) then redis.call('HSET', KEYS[1], 'fat', ARGV[8], 'follow', ARGV[7], 'fdecl', ARGV[9], 'fawait', ARGV[10], 'fedge', ARGV[11], 'fwin', ARGV[12]) end
for k = 13, #ARGV do redis.call('LPUSH', KEYS[2], ARGV[k]) end
if #ARGV >= 13 then
  redis.call('LTRIM', KEYS[2], 0, 31)
  redis.call('PEXPIRE', KEYS[2], 3600000)
end
redis.call('PEXPIRE', KEYS[1], 86400000)
return 0
`)

// recoverGrace is how many refreshes a worker keeps to its local share of
// a host after Redis answers again (Admit): about the time the other
// workers take to see it back.
const recoverGrace = 3

// Admit implements limit.HostShare: one round trip, or the local fallback
// while Redis is unreachable.
func (s *Share) Admit(host string, ceil, rate float64, now time.Time) (bool, time.Time) {
	s.mu.Lock()
	e := s.entryLocked(host)
	down := s.down
	s.stats.Admits++
	if !down && time.Since(s.upAt) < recoverGrace*s.cfg.Refresh { // (wall time, as setUp's)
		// Redis is back, and the other workers may not know it yet:
		// they still pace on their local share meanwhile, unseen by the
		// shared schedule. This worker keeps to its own local share too
		// for a few refreshes (two gateways back a second apart sent 12
		// and 13 requests in a second to a host of 8/s).
		ok, next := e.sched.Admit(e.view.Pause, ceil, rate, float64(max(1, s.workers)), now)
		if !ok {
			s.mu.Unlock()
			return false, next
		}
	}
	s.mu.Unlock()
	if !down {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
		res, err := admitScript.Run(ctx, s.rdb, s.keys(host)[:1], us(now), ceil, rate).Int64Slice()
		cancel()
		if err == nil && len(res) == 2 {
			if res[0] == 1 {
				return true, time.Time{}
			}
			return false, fromUs(res[1])
		}
		s.setDown(err)
	}
	// Redis unreachable: this worker's share of the host, locally.
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Fallbacks++
	return e.sched.Admit(e.view.Pause, ceil, rate, float64(max(1, s.workers)), now)
}

// Publish implements limit.HostShare: one round trip. While Redis is
// unreachable what changed is kept in the local view only.
func (s *Share) Publish(host string, v limit.HostView, now time.Time) {
	s.mu.Lock()
	e := s.entryLocked(host)
	e.view = e.view.Merge(v)
	e.has = true
	down := s.down
	s.stats.Publishes++
	if down {
		e.markUnsent()
		e.unsentEv = append(e.unsentEv, v.Evidence...)
		if n := len(e.unsentEv); n > maxEvidence {
			e.unsentEv = slices.Delete(e.unsentEv, 0, n-maxEvidence)
		}
	}
	s.mu.Unlock()
	if down {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	if err := s.publish(ctx, host, v, v.Evidence); err != nil {
		s.setDown(err)
		s.mu.Lock()
		e.markUnsent()
		s.mu.Unlock()
	}
}

// maxEvidence is how many evidence entries Redis keeps per host (the
// publish script's LTRIM).
const maxEvidence = 32

func (s *Share) publish(ctx context.Context, host string, v limit.HostView, evidence []limit.Evidence) error {
	decl := 0
	if v.Declared {
		decl = 1
	}
	args := []any{us(v.Pause), int(v.Scope), v.Rate, v.RateCeiling, v.RateFloor, us(v.Cut), v.Follow, us(v.FollowAt), decl, v.Await, us(v.Edge), v.Window.Microseconds()}
	for _, ev := range evidence {
		b, _ := json.Marshal(ev)
		args = append(args, string(b))
	}
	return publishScript.Run(ctx, s.rdb, s.keys(host), args...).Err()
}

// sendUnsent publishes the views that changed while Redis was unreachable.
// Every field of a view merges in Redis by "later wins", so sending the
// whole local view is safe: what another worker published since stands.
func (s *Share) sendUnsent(ctx context.Context) error {
	type pending struct {
		host    string
		view    limit.HostView
		ev      []limit.Evidence
		changes int64
	}
	var todo []pending
	s.mu.Lock()
	for h, e := range s.views {
		if e.unsent {
			todo = append(todo, pending{h, e.view, slices.Clone(e.unsentEv), e.changes})
		}
	}
	s.mu.Unlock()
	for _, p := range todo {
		if err := s.publish(ctx, p.host, p.view, p.ev); err != nil {
			return err
		}
		s.mu.Lock()
		if e := s.views[p.host]; e != nil {
			if e.changes == p.changes {
				e.unsent, e.unsentEv = false, nil
			} else if len(e.unsentEv) >= len(p.ev) {
				// Changed meanwhile: still unsent, less the evidence sent.
				e.unsentEv = slices.Delete(e.unsentEv, 0, len(p.ev))
			}
		}
		s.mu.Unlock()
	}
	return nil
}

// Workers implements limit.HostShare: the live workers at the last refresh
// (Config.Workers), at least 1.
func (s *Share) Workers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(1, s.workers)
}

// Exits reports the workers' pool (Config.Exits), 0 when not known: the
// Limiter counts the other workers' lanes from it (limit.HostShare).
func (s *Share) Exits() int {
	if s.cfg.Exits == nil {
		return 0
	}
	return s.cfg.Exits()
}

// Leads implements limit.HostShare: Config.Leads, or true without one.
func (s *Share) Leads(host string) bool {
	return s.cfg.Leads == nil || s.cfg.Leads(host)
}

// View implements limit.HostShare: the cached view, never a round trip.
func (s *Share) View(host string) (limit.HostView, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entryLocked(host)
	return e.view, e.has
}

// entryLocked returns host's entry, marked used now (the wall clock: it
// decides what the refresh loop reads, whatever clock the caller runs).
func (s *Share) entryLocked(host string) *entry {
	now := time.Now()
	e := s.views[host]
	if e == nil {
		if len(s.views) >= 1<<16 {
			for h, old := range s.views {
				if now.Sub(old.used) > time.Hour {
					delete(s.views, h)
				}
			}
		}
		e = &entry{}
		s.views[host] = e
	}
	e.used = now
	return e
}

// Run refreshes the views of the hosts used in the last minute every
// Config.Refresh, and notices when Redis is back, until ctx ends.
func (s *Share) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.cfg.Workers != nil {
			if n := s.cfg.Workers(); n > 0 {
				s.mu.Lock()
				s.workers = n
				s.mu.Unlock()
			}
		}
		s.refresh(ctx)
	}
}

// refresh reads the views of the hosts in use, one pipelined round trip.
func (s *Share) refresh(ctx context.Context) {
	now := time.Now()
	s.mu.Lock()
	var hosts []string
	for h, e := range s.views {
		if now.Sub(e.used) < time.Minute {
			hosts = append(hosts, h)
		}
	}
	s.stats.Refreshes++
	s.mu.Unlock()
	if len(hosts) == 0 {
		if s.Down() {
			err := s.rdb.Ping(ctx).Err()
			if err == nil {
				err = s.sendUnsent(ctx)
			}
			if err == nil {
				s.setUp()
			}
		}
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 4*s.cfg.Timeout)
	defer cancel()
	if err := s.sendUnsent(cctx); err != nil {
		s.setDown(err)
		return
	}
	pipe := s.rdb.Pipeline()
	hs := make([]*goredis.MapStringStringCmd, len(hosts))
	ls := make([]*goredis.StringSliceCmd, len(hosts))
	for i, h := range hosts {
		k := s.keys(h)
		hs[i] = pipe.HGetAll(cctx, k[0])
		ls[i] = pipe.LRange(cctx, k[1], 0, 31)
	}
	if _, err := pipe.Exec(cctx); err != nil && !errors.Is(err, goredis.Nil) {
		s.setDown(err)
		return
	}
	s.setUp()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, h := range hosts {
		m := hs[i].Val()
		num := func(k string) float64 { f, _ := strconv.ParseFloat(m[k], 64); return f }
		v := limit.HostView{
			Pause: fromUs(int64(num("pause"))), Scope: limit.Scope(num("scope")),
			Rate: num("rate"), RateCeiling: num("hi"), RateFloor: num("lo"), Cut: fromUs(int64(num("cut"))),
			Follow: num("follow"), FollowAt: fromUs(int64(num("fat"))), Declared: num("fdecl") == 1,
			Await: int32(num("fawait")), Edge: fromUs(int64(num("fedge"))), Window: time.Duration(num("fwin")) * time.Microsecond,
		}
		for _, raw := range ls[i].Val() {
			var ev limit.Evidence
			if json.Unmarshal([]byte(raw), &ev) == nil {
				v.Evidence = append(v.Evidence, ev)
			}
		}
		e := s.views[h]
		if e == nil {
			continue
		}
		if s.lostLocked(e, &v) {
			e.markUnsent() // sent again at the next refresh
		}
		e.view, e.has = v, len(m) > 0 || len(v.Evidence) > 0 || e.has
	}
}

// lostLocked keeps in v (what Redis holds for a host) what e's view holds
// newer, and reports whether there was any: Redis lost it. Each field is
// stamped (a pause by its end, the host rate by its cut, the followers'
// pace by when the leader set it), so Redis holding an older one than a
// worker saw means a write went missing: a failover to a replica that had
// not received it, or a restart that came back from an append-only file a
// second behind, too fast for this worker to see Redis away. Redis's scope
// stands: it only ever moves to a known one.
func (s *Share) lostLocked(e *entry, v *limit.HostView) bool {
	lost := false
	if l := e.view; l.Pause.After(v.Pause) {
		v.Pause, lost = l.Pause, true
	}
	if l := e.view; l.Cut.After(v.Cut) {
		v.Rate, v.RateCeiling, v.RateFloor, v.Cut, lost = l.Rate, l.RateCeiling, l.RateFloor, l.Cut, true
	}
	if l := e.view; l.FollowAt.After(v.FollowAt) {
		v.Follow, v.FollowAt, v.Declared, v.Await, v.Edge, v.Window, lost = l.Follow, l.FollowAt, l.Declared, l.Await, l.Edge, l.Window, true
	}
	return lost
}

// Down reports that Redis is away and View returns what was read before
// (the limiter then takes no raise of a leader's pace from it).
func (s *Share) Down() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

func (s *Share) setDown(err error) {
	if !unavailable(err) {
		s.log.Warn("redisstate: a script failed", "err", err)
		return
	}
	n := 0
	if s.cfg.Workers != nil {
		n = s.cfg.Workers()
	}
	s.mu.Lock()
	was := s.down
	s.down = true
	if n > 0 {
		s.workers = n
	}
	n = s.workers
	s.mu.Unlock()
	if !was {
		s.log.Warn("redisstate: Redis unreachable; each host's ceiling is shared locally by the last known worker count", "workers", n, "err", err)
	}
}

func (s *Share) setUp() {
	s.mu.Lock()
	was := s.down
	s.down = false
	if was {
		s.upAt = time.Now()
	}
	s.mu.Unlock()
	if was {
		s.log.Warn("redisstate: Redis is back; host state is shared again")
	}
}

// Stats returns the calls made so far.
func (s *Share) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// unavailable reports whether err means Redis could not be reached (as
// opposed to a reply refusing the command).
func unavailable(err error) bool {
	if err == nil || errors.Is(err, goredis.Nil) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	msg := err.Error()
	for _, p := range []string{"LOADING", "CLUSTERDOWN", "READONLY", "MASTERDOWN", "TRYAGAIN", "connection refused", "EOF", "broken pipe", "connection reset", "closed", "pool timeout"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	var re goredis.Error
	return !errors.As(err, &re)
}

var _ limit.HostShare = (*Share)(nil)
