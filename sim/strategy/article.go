package strategy

import (
	"math"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

// articlePerExitSpec is the per-exit token bucket of "429s Belong to the
// Exit, Not the Worker" (reference/article-per-exit-token-buckets.txt), its
// published rules on one bucket per (host, exit):
//
//	ExitBucket(capacity=30, tokens=30, refill_per_sec=capacity/60)
//	acquire: refill min(capacity, tokens + elapsed*refill); wait out
//	         penalty_until; take one token
//	report_429: penalty_until = now + Retry-After (when given);
//	            capacity = max(2, capacity*0.5); tokens = min(tokens, capacity);
//	            refill = capacity/60
//
// plus what its text promises and its code omits: on 100 consecutive
// successes capacity grows 25% back toward the default. 429s of requests
// already in flight when one arrived count once (the article's loop sends
// one request per exit at a time, so it never sees them). The exit is chosen
// before the bucket is consulted, and a dry bucket costs a reroute to an
// exit that can go now (exitgate's selection): the article's own loop picks
// exits at random and retries once. Its code crashes as published (it reads
// b.refill_rate, which does not exist); only its rules are kept.
func articlePerExitSpec() Spec {
	return Spec{
		Name:     ArticlePerExit,
		Summary:  "the article's per-exit bucket: 30/min, halve on 429 (floor 2/min), +25% after 100 successes",
		Source:   "reference/article-per-exit-token-buckets.txt (ExitBucket, ExitRateLimiter)",
		Sessions: true,
		New: func(env Env) (fetch.Limiter, error) {
			env, err := env.withDefaults()
			if err != nil {
				return nil, err
			}
			return &lockedLimiter{inner: &articleBuckets{rot: newRotation(env), hosts: map[string]map[string]*exitBucket{}}}, nil
		},
	}
}

// The article's constants.
const (
	articleCapacity = 30.0 // requests per window
	articleWindow   = 60.0 // seconds
	articleFloor    = 2.0  // capacity floor after halvings
	articleStreak   = 100  // consecutive successes that grow capacity
	articleGrow     = 1.25
)

type exitBucket struct {
	capacity, tokens float64
	last             time.Time
	penaltyUntil     time.Time
	streak           int
	taken            uint64    // when it last gave a token: the least recently used goes first
	episode          time.Time // when the last counted 429 arrived
}

func (b *exitBucket) refill(now time.Time) {
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = math.Min(b.capacity, b.tokens+el*b.capacity/articleWindow)
	}
	b.last = now
}

// readyAt is when b may give a token.
func (b *exitBucket) readyAt(now time.Time) time.Time {
	b.refill(now)
	t := now
	if b.tokens < 1 {
		t = now.Add(after((1 - b.tokens) * articleWindow / b.capacity))
	}
	if b.penaltyUntil.After(t) {
		t = b.penaltyUntil
	}
	return t
}

type articleBuckets struct {
	rot   rotation
	hosts map[string]map[string]*exitBucket
	tk    tickets[*exitBucket]
	seq   uint64
}

func (a *articleBuckets) bucket(host, exit string, now time.Time) *exitBucket {
	bs := a.hosts[host]
	if bs == nil {
		bs = map[string]*exitBucket{}
		a.hosts[host] = bs
	}
	b := bs[exit]
	if b == nil {
		b = &exitBucket{capacity: articleCapacity, tokens: articleCapacity, last: now}
		bs[exit] = b
	}
	return b
}

func (a *articleBuckets) acquire(host string, want limit.Want, now time.Time) (limit.Ticket, bool, time.Time, error) {
	exit, soonest, err := leastRecentReady(a.rot.exits, want, now,
		func(e string) time.Time { return a.bucket(host, e, now).readyAt(now) },
		func(e string) uint64 { return a.bucket(host, e, now).taken })
	if exit == "" {
		return limit.Ticket{}, false, soonest, err
	}
	best, bestExit := a.bucket(host, exit, now), exit
	best.tokens--
	a.seq++
	best.taken = a.seq
	return a.tk.issue(host, bestExit, now, best), true, time.Time{}, nil
}

func (a *articleBuckets) done(t limit.Ticket, o limit.Outcome, now time.Time) {
	b, ok := a.tk.take(t)
	if !ok {
		return
	}
	switch o.Verdict {
	case verdict.Throttled:
		b.streak = 0
		if o.RetryAfter > 0 && now.Add(o.RetryAfter).After(b.penaltyUntil) {
			b.penaltyUntil = now.Add(o.RetryAfter)
		}
		if sent := t.At; !o.SentAt.IsZero() {
			sent = o.SentAt
			if sent.Before(b.episode) {
				return // in flight when the last 429 came: the same message
			}
		} else if t.At.Before(b.episode) {
			return
		}
		b.episode = now
		b.capacity = math.Max(articleFloor, b.capacity*0.5)
		b.tokens = math.Min(b.tokens, b.capacity)
	case verdict.OK:
		b.streak++
		if b.streak >= articleStreak {
			b.streak = 0
			b.capacity = math.Min(articleCapacity, b.capacity*articleGrow)
		}
	}
}

func (a *articleBuckets) cancel(t limit.Ticket, now time.Time) {
	if b, ok := a.tk.take(t); ok {
		b.refill(now)
		b.tokens = math.Min(b.capacity, b.tokens+1)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
