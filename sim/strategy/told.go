package strategy

import (
	"time"

	"golang.org/x/time/rate"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

// ToldShare is the share of the true per-IP limit the told reference paces
// each exit at: the figure the learner's targets are written against (a
// client told the limit and keeping a 5% margin).
const ToldShare = 0.95

// toldSpec is the reference a learner is judged against, not a design
// anyone publishes: every exit paced evenly at ToldShare of the target's
// true per-IP rate (Env.Rate), one golang.org/x/time/rate bucket with burst
// 1 per (host, exit), told rather than learned. It honours a Retry-After
// (any client would) and otherwise learns nothing. What it reaches on a
// real server is what the path's jitter leaves of 95%: a learner that
// reaches less lost the rest in learning; a target where it draws 429s
// pushes back at even pacing 5% under its limit.
func toldSpec() Spec {
	return Spec{
		Name:     Told,
		Summary:  "reference: each exit paced evenly at 95% of the true per-IP limit, told, not learned",
		Source:   "the learner's target (issue: a client told the true limit, pacing each exit at 0.95x of it); golang.org/x/time/rate",
		Sessions: true,
		New: func(env Env) (fetch.Limiter, error) {
			env, err := env.withDefaults()
			if err != nil {
				return nil, err
			}
			return &lockedLimiter{inner: &told{rot: newRotation(env), rate: ToldShare * env.Rate, hosts: map[string]map[string]*toldLane{}}}, nil
		},
	}
}

type toldLane struct {
	bucket   *rate.Limiter
	waitTill time.Time // a Retry-After's end
	taken    uint64    // when it last went: the least recently used goes first
}

type told struct {
	rot   rotation
	rate  float64
	hosts map[string]map[string]*toldLane
	tk    tickets[toldTicket]
	seq   uint64
}

type toldTicket struct {
	lane *toldLane
	r    *rate.Reservation
}

// readyAt is when the lane may send: its bucket's next token (asked as
// take asks it, so that ready means take succeeds: TokensAt reads
// 0.99999 at the token's very instant), or the end of a Retry-After.
func (l *toldLane) readyAt(now time.Time) time.Time {
	at := now
	if r, next, ok := take(l.bucket, now); ok {
		r.CancelAt(now) // only asked
	} else {
		at = next
	}
	if l.waitTill.After(at) {
		at = l.waitTill
	}
	return at
}

func (t *told) lane(host, exit string) *toldLane {
	ls := t.hosts[host]
	if ls == nil {
		ls = map[string]*toldLane{}
		t.hosts[host] = ls
	}
	l := ls[exit]
	if l == nil {
		l = &toldLane{bucket: rate.NewLimiter(rate.Limit(t.rate), 1)}
		ls[exit] = l
	}
	return l
}

func (t *told) acquire(host string, want limit.Want, now time.Time) (limit.Ticket, bool, time.Time, error) {
	exit, soonest, err := leastRecentReady(t.rot.exits, want, now,
		func(e string) time.Time { return t.lane(host, e).readyAt(now) },
		func(e string) uint64 { return t.lane(host, e).taken })
	if exit == "" {
		return limit.Ticket{}, false, soonest, err
	}
	best, bestExit := t.lane(host, exit), exit
	r, _, ok := take(best.bucket, now)
	if !ok {
		return limit.Ticket{}, false, now.Add(time.Millisecond), nil
	}
	t.seq++
	best.taken = t.seq
	return t.tk.issue(host, bestExit, now, toldTicket{best, r}), true, time.Time{}, nil
}

func (t *told) done(tk limit.Ticket, o limit.Outcome, now time.Time) {
	v, ok := t.tk.take(tk)
	if !ok {
		return
	}
	if o.Verdict == verdict.Throttled && o.RetryAfter > 0 && now.Add(o.RetryAfter).After(v.lane.waitTill) {
		v.lane.waitTill = now.Add(o.RetryAfter)
	}
}

func (t *told) cancel(tk limit.Ticket, now time.Time) {
	if v, ok := t.tk.take(tk); ok {
		v.r.CancelAt(now)
	}
}
