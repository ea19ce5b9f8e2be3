package limit

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exitgate/exitgate/verdict"
)

// Limiter decides when, and through which exit, each request to a host may
// go, and learns from the outcomes. It is safe for concurrent use. Make one
// with New: the zero Limiter has no configuration; its Acquire returns
// ErrNotNew, HasExit false, and its other methods panic with ErrNotNew.
type Limiter struct {
	id       uint64 // tells its tickets from another's (Ticket.issuer)
	rules    *rules
	tab      *table
	log      *slog.Logger
	pool     atomic.Pointer[exitPool]
	inFlight atomic.Int64
	// poolChanged is closed, and replaced, when SetExits changes the
	// pool: a Wait asleep for a lane asks again (an exit added may send
	// at once; it slept out the old pool's wait, 10 s for one that
	// could go at 0.2 s).
	poolChanged atomic.Pointer[chan struct{}]

	mu  sync.Mutex // guards rnd
	rnd *rand.Rand

	share  HostShare // nil: alone
	shMu   sync.Mutex
	shSeen map[string]*int64 // newest shared evidence adopted, per host
}

// New validates cfg once and returns a Limiter with no exits; call SetExits.
func New(cfg Config) (*Limiter, error) {
	r, err := cfg.rules()
	if err != nil {
		return nil, err
	}
	l := &Limiter{rules: r, tab: newTable(), log: cfg.Logger, rnd: cfg.Rand, share: cfg.Shared, id: limiters.Add(1)}
	if l.log == nil {
		l.log = discardLogger()
	}
	if l.rnd == nil {
		var seed [16]byte
		_, _ = crand.Read(seed[:])
		l.rnd = rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	}
	l.pool.Store(newPool(nil))
	ch := make(chan struct{})
	l.poolChanged.Store(&ch)
	return l, nil
}

// SetExits replaces the pool. Exits are keyed by ID: lanes and health of
// exits that stay are kept. Calling it again with the same list is harmless.
// A provider Rate that is not one (NaN, infinite, negative) is read as none
// and one below a request a year as that, a negative Concurrency as none:
// logged at warning level, since there is no error to return.
func (l *Limiter) SetExits(exits []Exit) {
	l.mustBeNew()
	p := newPool(exits)
	if old := l.pool.Load(); old != nil && samePool(old, p) {
		return
	}
	for _, e := range exits {
		if why := validExit(e); why != "" {
			l.log.Warn("limit: exit's provider limit read otherwise", "exit", e.ID, "why", why)
		}
	}
	l.tab.setExits(p)
	l.pool.Store(p)
	ch := make(chan struct{})
	close(*l.poolChanged.Swap(&ch))
}

// ErrNotNew is what the zero Limiter's Acquire returns, and what its other
// methods panic with: a Limiter is made by New.
var ErrNotNew = errors.New("limit: a Limiter must be made by limit.New (the zero Limiter has no configuration)")

// mustBeNew panics with ErrNotNew on a Limiter New did not make (a nil
// pointer dereference said nothing of it).
func (l *Limiter) mustBeNew() {
	if l.rules == nil {
		panic(ErrNotNew)
	}
}

// HasExit reports whether exit is in the pool now (SetExits): a caller
// that holds an exit for long (a tunnel) lets go of it once it is not.
func (l *Limiter) HasExit(exit string) bool {
	p := l.pool.Load()
	if p == nil {
		return false
	}
	_, ok := p.idx[exit]
	return ok
}

// Acquire decides, at now, whether a request to host may go now and on which
// exit. If it can, it returns a Ticket and ok=true; pass the ticket to Done or
// Cancel. Otherwise ok=false, nothing is held, and next is the earliest time
// anything could go for this host (or a short recheck delay when only a
// concurrency cap blocks), so the caller schedules the host then instead of
// holding a worker.
func (l *Limiter) Acquire(host string, want Want, now time.Time) (t Ticket, ok bool, next time.Time, err error) {
	if l.rules == nil {
		return Ticket{}, false, time.Time{}, ErrNotNew // (it said ErrNoExits: no exits given)
	}
	now = sane(now)
	t, ok, next, err = l.acquire(host, want, now)
	if ok && l.share != nil {
		if ok, next = l.admitShared(t, now); !ok {
			return Ticket{}, false, next, nil
		}
	}
	return t, ok, next, err
}

func (l *Limiter) acquire(host string, want Want, now time.Time) (t Ticket, ok bool, next time.Time, err error) {
	if host == "" {
		return Ticket{}, false, time.Time{}, ErrNoHost
	}
	pool := l.pool.Load()
	if pool.Len() == 0 {
		return Ticket{}, false, time.Time{}, ErrNoExits
	}
	if want.Pin != "" && !pool.lookup(want.Pin) {
		return Ticket{}, false, time.Time{}, ErrUnknownExit
	}
	r := l.rules
	if l.inFlight.Add(1) > int64(r.maxInFlight) {
		l.inFlight.Add(-1)
		return Ticket{}, false, now.Add(time.Duration(r.recheck)), nil
	}
	n := now.UnixNano()
	l.tab.sweep(n, r.idleTTL)
	ready := l.tab.exitReady(r)
	sh := l.tab.shard(host)
	for try := 0; ; try++ {
		sh.mu.Lock()
		h := sh.hosts[host]
		if h == nil {
			h = newHost(host)
			sh.hosts[host] = h
		}
		if l.share != nil {
			l.adoptLocked(h, host, n)
		}
		res := r.acquire(h, pool, host, want, n, ready)
		var pub HostView
		publish := false
		if l.share != nil {
			pub, publish = h.followChanged(n)
		}
		changes := h.log.takeOp()
		sh.mu.Unlock()
		l.logChanges(host, changes)
		if publish {
			l.share.Publish(host, pub, now)
		}
		if !res.ok {
			l.inFlight.Add(-1)
			return Ticket{}, false, time.Unix(0, res.next), nil
		}
		t := res.ticket
		t.At, t.issuer = now, l.id
		if !res.gated {
			return t, true, time.Time{}, nil
		}
		var ok, probe bool
		var next int64
		l.tab.exit(t.Exit, func(e *exitState) { ok, probe, next = e.take(r, n) })
		if next == 0 && !ok {
			ok = true // the exit left the pool: nothing to charge
		}
		if ok {
			t.ExitHeld, t.Probe = true, probe
			return t, true, time.Time{}, nil
		}
		// The exit filled up between the two decisions: give the lane back
		// and try another exit (or report when the pinned one frees).
		sh.mu.Lock()
		if h := sh.hosts[host]; h != nil {
			r.release(h, t, relCanceled, &Outcome{}, n, 0)
		}
		sh.mu.Unlock()
		if want.Pin != "" || try >= 2 {
			l.inFlight.Add(-1)
			if next == 0 {
				next = n + r.recheck
			}
			return Ticket{}, false, time.Unix(0, next), nil
		}
		want.Avoid = append(want.Avoid[:len(want.Avoid):len(want.Avoid)], t.Exit)
	}
}

// Wait blocks until a request to host may go, then returns its Ticket. It
// returns ctx's error if ctx ends first, and returns at once (with
// context.DeadlineExceeded) when the wait would pass ctx's deadline, as
// golang.org/x/time/rate does: a caller with a deadline learns now, not at
// the deadline, that it cannot go in time. Nothing is held then.
func (l *Limiter) Wait(ctx context.Context, host string, want Want) (Ticket, error) {
	l.mustBeNew()
	for {
		if err := ctx.Err(); err != nil {
			return Ticket{}, err
		}
		// Taken before asking: a pace that rises after the answer ends
		// the sleep, which was timed at the slower pace.
		raised := l.raised(host)
		changed := *l.poolChanged.Load() // (New made one)
		now := time.Now()
		t, ok, next, err := l.Acquire(host, want, now)
		if err != nil {
			return Ticket{}, err
		}
		if ok {
			return t, nil
		}
		if dl, has := ctx.Deadline(); has && next.After(dl) {
			return Ticket{}, context.DeadlineExceeded
		}
		d := next.Sub(now)
		if d <= 0 {
			d = time.Duration(l.rules.recheck)
		}
		tm := time.NewTimer(d)
		select {
		case <-ctx.Done():
			tm.Stop()
			return Ticket{}, ctx.Err()
		case <-raised:
			tm.Stop()
		case <-changed:
			tm.Stop()
		case <-tm.C:
		}
	}
}

// raised returns a channel closed when a lane of host next goes faster
// (nil, which never fires, for a host not seen yet: its first Acquire
// creates it at its start pace).
func (l *Limiter) raised(host string) <-chan struct{} {
	sh := l.tab.shard(host)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	h := sh.hosts[host]
	if h == nil {
		return nil
	}
	if h.wake == nil {
		h.wake = make(chan struct{})
	}
	return h.wake
}

// wakeWaiters ends the sleep of every Wait on h when a pace rose in the
// operation just done, and reports whether one did. Called with the shard
// locked.
func (h *host) wakeWaiters() bool {
	raised := h.raised
	if raised && h.wake != nil {
		close(h.wake)
		h.wake = nil
	}
	h.raised = false
	return raised
}

func (l *Limiter) jitter() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rnd.Float64()
}

// Done reports the outcome of a request made with t, at now. It releases the
// ticket's slots exactly once (later calls with the same ticket are ignored)
// and feeds the learning of the lane, the host and the exit.
func (l *Limiter) Done(t Ticket, o Outcome, now time.Time) {
	l.release(t, relDone, o, now)
}

// DoneFaster is Done, and reports whether the outcome made a lane of t's
// host go faster (the ramp doubled, a step passed): the host's next request
// may go sooner than Acquire last said, and a caller holding the host until
// then should ask again now.
func (l *Limiter) DoneFaster(t Ticket, o Outcome, now time.Time) bool {
	return l.release(t, relDone, o, now)
}

// Cancel returns a ticket whose request was never sent: its token, quota and
// slots are given back exactly, and nothing is learned.
func (l *Limiter) Cancel(t Ticket, now time.Time) {
	l.release(t, relCanceled, Outcome{}, now)
}

// Abandon returns a ticket whose request was sent but whose answer will not
// be heard (the caller's deadline ended while the server had it): its slots
// are given back, its token and quota stay spent (the server may have
// counted it), and nothing is learned. Given back as never sent, a client
// timing out on a slow server had its pace refunded and sent again at once:
// 19 requests reached a host held to 2/s in 5 s.
func (l *Limiter) Abandon(t Ticket, now time.Time) {
	l.release(t, relAbandoned, Outcome{}, now)
}

// releaseKind is how a ticket comes back: with an answer (Done), never sent
// (Cancel), or sent and its answer never heard (Abandon).
type releaseKind uint8

const (
	relDone releaseKind = iota
	relCanceled
	relAbandoned
)

// release gives t back with its outcome o and reports whether a lane of
// its host went faster.
func (l *Limiter) release(t Ticket, kind releaseKind, o Outcome, now time.Time) (faster bool) {
	l.mustBeNew()
	heard := kind == relDone // else nothing learned, nothing published
	if t.issuer != 0 && t.issuer != l.id {
		return false // another Limiter's
	}
	now = sane(now)
	o = o.sane()
	r := l.rules
	var u float64
	if heard && (o.Verdict == verdict.Throttled || o.Verdict == verdict.Busy) {
		u = l.jitter()
	}
	n := now.UnixNano()
	sh := l.tab.shard(t.Host)
	sh.mu.Lock()
	h := sh.hosts[t.Host]
	var m sharedMark
	if h != nil && l.share != nil {
		m = h.mark()
	}
	ok := h != nil && r.release(h, t, kind, &o, n, u)
	var changes []Change
	var pub HostView
	publish := false
	if h != nil {
		faster = h.wakeWaiters()
		changes = h.log.takeOp()
		if l.share != nil && heard {
			pub, publish = h.changed(m, n)
		}
	}
	sh.mu.Unlock()
	l.logChanges(t.Host, changes)
	if publish {
		l.share.Publish(t.Host, pub, now)
	}
	if !ok {
		return faster
	}
	l.inFlight.Add(-1)
	if t.ExitHeld || (heard && o.Verdict == verdict.ProxyFailure) {
		l.tab.exit(t.Exit, func(e *exitState) { e.release(r, t.ExitHeld, t.Probe, kind, o.Verdict, n) })
	}
	return faster
}

// logChanges logs the change records of one operation at debug level (a
// host's rate taking over at a warning), each timed when it was made (the
// caller's clock: virtual in a simulation), not when it is logged.
func (l *Limiter) logChanges(host string, cs []Change) {
	ctx := context.Background()
	if len(cs) == 0 {
		return
	}
	debug := l.log.Enabled(ctx, slog.LevelDebug)
	for _, c := range cs {
		level := slog.LevelDebug
		if c.Rule == "host-rate" && c.What == "host-rate" && c.From == 0 && c.To > 0 {
			// One rate for the whole host, whatever the exits: what a
			// user sees as a crawl slowed to a crawl, said once at a
			// warning (a flaky URL's 503s held a host at 2/s of its
			// --host-rate of 40 with nothing said but the ETA).
			level = slog.LevelWarn
		}
		if c.Rule == "busy" && c.What == "noise" {
			// Its letting go is said as loud (busyNoiseRead).
			level = slog.LevelWarn
		}
		if level == slog.LevelDebug && !debug {
			continue
		}
		msg := "limit: " + c.Why
		if level == slog.LevelWarn && c.Rule == "host-rate" {
			msg += fmt.Sprintf(": the whole host held to %.3g/s", c.To)
		}
		rec := slog.NewRecord(c.At, level, msg, 0)
		rec.AddAttrs(slog.String("host", host), slog.String("lane", c.Lane), slog.String("rule", c.Rule),
			slog.String("what", c.What), slog.Float64("from", c.From), slog.Float64("to", c.To))
		_ = l.log.Handler().Handle(ctx, rec) // a handler's error is its own: the change is kept in the ring anyway
	}
}

// sane is now, or the clock's time for a now the limiter's nanoseconds
// cannot hold (before 1970 or past 2262: a zero time.Time): a Done at the
// zero time poisoned its host, whose next Acquire panicked indexing a
// second's count at -33.
func sane(now time.Time) time.Time {
	if s := now.Unix(); s < 0 || s >= maxUnixNano/int64(time.Second) { // (Unix is cheap; Year is not, on every Acquire)
		return time.Now()
	}
	return now
}

// maxUnixNano is the last time UnixNano holds (2262-04-11).
const maxUnixNano = math.MaxInt64

// sane is o with the numbers no server could have meant left out (NaN,
// infinite or negative counts, negative times): a caller's NaN quota made
// every later Snapshot and Learned fail to encode. rlheader never gives
// them; an Outcome built by hand may.
func (o Outcome) sane() Outcome {
	bad := func(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) || f < 0 }
	if bad(o.Quota) {
		o.Quota, o.Window = 0, 0
	}
	if bad(o.Remaining) {
		o.Remaining, o.HasRemaining = 0, false
	}
	o.RetryAfter, o.Window, o.ResetIn = max(o.RetryAfter, 0), max(o.Window, 0), max(o.ResetIn, 0)
	return o
}

// limiters numbers the Limiters made (Limiter.id).
var limiters atomic.Uint64
