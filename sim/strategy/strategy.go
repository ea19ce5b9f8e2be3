// Package strategy holds the rate-limiting strategies the simulator compares:
// exitgate's limiter, the reference article's per-exit rules, and faithful
// reimplementations of the baselines people actually run (a global
// per-domain bucket, per-worker buckets over a shared pool, the article's
// per-host AIMD limiter, Scrapy's AutoThrottle with RetryMiddleware, Colly's
// LimitRule, and no limiter at all).
//
// Every strategy implements fetch.Limiter, so the simulator drives the SAME
// fetch.Core — the same scheduling, retries, parking and classification —
// for all of them; only the decision "may a request go now, and through which
// exit" and what is learned from each response differ. Each baseline cites
// the source of its behaviour in its file.
//
// All limiters here are safe for concurrent use and deterministic for a given
// Env.Rand seed and sequence of calls.
package strategy

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

// Env is what a strategy is built for: the exits it may hand out and the
// numbers an operator would have configured by hand.
type Env struct {
	// Exits are the exit keys the strategy puts in tickets. Required.
	Exits []string
	// Rate is the per-key rate in requests per second that the target
	// documents (say "1 request per second per IP"): the number an operator
	// types into a hand-sized limiter. Used by global-per-domain,
	// per-worker and colly-limitrule. Default 1.
	Rate float64
	// InFlight sizes exitgate's process-wide and per-host in-flight caps for
	// very large pools; 0 keeps the limiter's defaults (256 and 32).
	InFlight int
	// Rand drives every random choice (exit rotation, jitter). nil: a fixed
	// seed, so runs repeat.
	Rand *rand.Rand
	// Logger receives exitgate's change records at debug level (why a lane
	// sped up or slowed down). nil: discarded. The baselines ignore it.
	Logger *slog.Logger
}

// ErrNoExits is returned by Spec.New when Env.Exits is empty.
var ErrNoExits = errors.New("strategy: no exits")

func (e Env) withDefaults() (Env, error) {
	if len(e.Exits) == 0 {
		return e, ErrNoExits
	}
	if e.Rate <= 0 {
		e.Rate = 1
	}
	if e.Rand == nil {
		e.Rand = rand.New(rand.NewPCG(1, 2))
	}
	return e, nil
}

// Spec describes one strategy: how to build its limiter and how the Core
// around it is configured (its documented worker count and retry rules).
// Specs are plain values.
type Spec struct {
	// Name is the strategy's name on the command line.
	Name string
	// Summary says in one line what the strategy does.
	Summary string
	// Source cites where the behaviour comes from.
	Source string
	// Concurrency is the Core's total in-flight cap for this strategy (its
	// documented worker count); 0 means the Core default.
	Concurrency int
	// Retry is the Core's retry policy for this strategy; the zero value is
	// the Core's default.
	Retry fetch.RetryPolicy
	// Verdicts overrides classification per status (e.g. a 403 that the
	// baseline never retries); nil means the defaults.
	Verdicts map[int]verdict.Verdict
	// Sessions says that behind a rotating gateway the strategy uses sticky
	// sessions as its exits (exitgate and the article do); the others send
	// everything through the rotating endpoint.
	Sessions bool
	// ResolveIPs says the strategy keys exits by their resolved IP, so two
	// sessions on one IP share a lane (exitgate's pool.Identity).
	ResolveIPs bool
	// New builds the limiter for env.
	New func(env Env) (fetch.Limiter, error)
}

// Names of the strategies, in the order All returns them.
const (
	Exitgate           = "exitgate"
	ExitgateFleet      = "exitgate-fleet"
	ArticlePerExit     = "article-per-exit"
	ArticlePerHost     = "article-per-host-aimd"
	GlobalPerDomain    = "global-per-domain"
	PerWorker          = "per-worker"
	ScrapyAutoThrottle = "scrapy-autothrottle"
	CollyLimitRule     = "colly-limitrule"
	NoLimiter          = "no-limiter"
	// Told is the reference, neither exitgate nor a baseline: each exit
	// paced at ToldShare of the true limit (told.go).
	Told = "told"
)

// All returns every strategy, exitgate first.
func All() []Spec {
	return []Spec{
		exitgateSpec(),
		exitgateFleetSpec(),
		articlePerExitSpec(),
		articlePerHostSpec(),
		globalSpec(),
		perWorkerSpec(),
		autoThrottleSpec(),
		collySpec(),
		noLimiterSpec(),
	}
}

// Reference returns the told reference (a client told each target's true
// limit): named by ByName and Names, left out of All because it is no
// design to compare but the mark the others are read against.
func Reference() Spec { return toldSpec() }

// Baseline reports whether the named strategy is a baseline exitgate is
// measured against, not one of exitgate's own modes or the told reference.
func Baseline(name string) bool { return name != Exitgate && name != ExitgateFleet && name != Told }

// ByName returns the named strategy, the told reference included.
func ByName(name string) (Spec, bool) {
	for _, s := range append(All(), Reference()) {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Names returns the names of every strategy, in All's order, then the told
// reference.
func Names() []string {
	var out []string
	for _, s := range append(All(), Reference()) {
		out = append(out, s.Name)
	}
	return out
}

// limiterExits converts exit keys for limit.Limiter.SetExits.
func limiterExits(keys []string) []limit.Exit {
	out := make([]limit.Exit, 0, len(keys))
	for _, k := range keys {
		out = append(out, limit.Exit{ID: k})
	}
	return out
}

// tickets hands out ticket sequence numbers and makes every release count
// once, as fetch.Limiter requires. Callers hold their own mutex.
type tickets[T any] struct {
	seq  uint64
	live map[uint64]T
}

func (t *tickets[T]) issue(host, exit string, now time.Time, v T) limit.Ticket {
	if t.live == nil {
		t.live = map[uint64]T{}
	}
	t.seq++
	t.live[t.seq] = v
	return limit.Ticket{Host: host, Exit: exit, At: now, Seq: t.seq}
}

// take returns the value recorded for tk and forgets it; ok is false for an
// unknown or already released ticket.
func (t *tickets[T]) take(tk limit.Ticket) (T, bool) {
	v, ok := t.live[tk.Seq]
	if ok {
		delete(t.live, tk.Seq)
	}
	return v, ok
}

// rotation picks an exit per request the way a rotating pool does: uniformly
// at random, independent of what the others picked (so collisions on one
// exit are pure luck).
type rotation struct {
	exits []string
	rnd   *rand.Rand
}

func newRotation(env Env) rotation {
	ex := append([]string(nil), env.Exits...)
	sort.Strings(ex)
	return rotation{exits: ex, rnd: env.Rand}
}

func (r rotation) pick() string { return r.exits[r.rnd.IntN(len(r.exits))] }

// lockedLimiter adapts a non-concurrent implementation with one mutex.
type lockedLimiter struct {
	mu    sync.Mutex
	inner interface {
		acquire(host string, want limit.Want, now time.Time) (limit.Ticket, bool, time.Time, error)
		done(t limit.Ticket, o limit.Outcome, now time.Time)
		cancel(t limit.Ticket, now time.Time)
	}
}

func (l *lockedLimiter) Acquire(host string, want limit.Want, now time.Time) (limit.Ticket, bool, time.Time, error) {
	if host == "" {
		return limit.Ticket{}, false, time.Time{}, limit.ErrNoHost
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inner.acquire(host, want, now)
}

func (l *lockedLimiter) Done(t limit.Ticket, o limit.Outcome, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inner.done(t, o, now)
}

func (l *lockedLimiter) Cancel(t limit.Ticket, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inner.cancel(t, now)
}

// leastRecentReady picks a request's exit by each exit's own readiness, as
// exitgate's selection does: among the exits want allows (the pinned one, or
// every pool exit it does not avoid), the least recently taken of those
// ready at now. With none ready it returns "" and when the soonest will be
// (a second on when there is none to ask).
func leastRecentReady(exits []string, want limit.Want, now time.Time, readyAt func(exit string) time.Time, taken func(exit string) uint64) (string, time.Time, error) {
	pin, err := pinned(want, exits)
	if err != nil {
		return "", time.Time{}, err
	}
	cands := exits
	if pin != "" {
		cands = []string{pin}
	}
	best := ""
	var soonest time.Time
	for _, e := range cands {
		if pin == "" && contains(want.Avoid, e) {
			continue
		}
		if t := readyAt(e); t.After(now) {
			if soonest.IsZero() || t.Before(soonest) {
				soonest = t
			}
			continue
		}
		if best == "" || taken(e) < taken(best) {
			best = e
		}
	}
	if best == "" && soonest.IsZero() {
		soonest = now.Add(time.Second)
	}
	return best, soonest, nil
}

// pinned reports whether want pins an exit, and whether that exit is known.
func pinned(want limit.Want, exits []string) (string, error) {
	if want.Pin == "" {
		return "", nil
	}
	for _, e := range exits {
		if e == want.Pin {
			return want.Pin, nil
		}
	}
	return "", fmt.Errorf("%w: %q", limit.ErrUnknownExit, want.Pin)
}

func secs(d float64) time.Duration { return time.Duration(d * float64(time.Second)) }

// after converts a wait in seconds to a Duration rounded up to at least 1ns,
// so that "not yet" never reads as "now" after float rounding.
func after(d float64) time.Duration {
	return max(time.Nanosecond, time.Duration(math.Ceil(d*float64(time.Second))))
}
