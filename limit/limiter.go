package limit

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exitgate/exitgate/verdict"
)

// Limiter decides when and through which exit each request to a host may go,
// and learns from the outcomes. It is safe for concurrent use; its state lives
// in a Store, so several Limiters (processes) may share one.
type Limiter struct {
	rules    *Rules
	store    Store
	log      *slog.Logger
	pool     atomic.Pointer[Pool]
	inFlight atomic.Int64

	mu  sync.Mutex // guards rnd
	rnd *rand.Rand
}

// ErrNilStore: New was given no Store.
var ErrNilStore = errors.New("limit: nil store")

// New validates cfg once and returns a Limiter over store (memstore.New() in
// the default setup).
func New(cfg Config, store Store) (*Limiter, error) {
	if store == nil {
		return nil, ErrNilStore
	}
	r, err := cfg.rules()
	if err != nil {
		return nil, err
	}
	l := &Limiter{rules: r, store: store, log: cfg.Logger, rnd: cfg.Rand}
	if l.log == nil {
		l.log = discardLogger()
	}
	if l.rnd == nil {
		var seed [16]byte
		_, _ = crand.Read(seed[:])
		l.rnd = rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	}
	l.pool.Store(NewPool(nil))
	return l, nil
}

// Rules returns the validated configuration, defaults filled in.
func (l *Limiter) Rules() *Rules { return l.rules }

// SetExits replaces the pool. Exits are keyed by ID: lanes and health of
// exits that stay are kept. Calling it again with the same list is harmless.
func (l *Limiter) SetExits(exits []Exit) {
	p := NewPool(exits)
	if old := l.pool.Load(); old != nil && samePool(old, p) {
		return
	}
	if err := l.store.SetExits(context.Background(), p, time.Now()); err != nil {
		l.log.Warn("limit: set exits", "err", err)
	}
	l.pool.Store(p)
}

func samePool(a, b *Pool) bool { return slices.Equal(a.exits, b.exits) }

// Acquire decides, at now, whether a request to host may go now and on which
// exit. If it can, it returns a Ticket and ok=true; pass the ticket to Done or
// Cancel. Otherwise ok=false, nothing is held, and next is the earliest time
// anything could go for this host (or a short recheck delay when only a
// concurrency cap blocks), so the caller schedules the host then instead of
// holding a worker.
func (l *Limiter) Acquire(host string, want Want, now time.Time) (t Ticket, ok bool, next time.Time, err error) {
	return l.acquire(context.Background(), host, want, now)
}

func (l *Limiter) acquire(ctx context.Context, host string, want Want, now time.Time) (Ticket, bool, time.Time, error) {
	if host == "" {
		return Ticket{}, false, time.Time{}, ErrNoHost
	}
	pool := l.pool.Load()
	if pool.Len() == 0 {
		return Ticket{}, false, time.Time{}, ErrNoExits
	}
	if want.Pin != "" {
		if _, ok := pool.Lookup(want.Pin); !ok {
			return Ticket{}, false, time.Time{}, ErrUnknownExit
		}
	}
	if l.inFlight.Add(1) > int64(l.rules.MaxInFlight) {
		l.inFlight.Add(-1)
		return Ticket{}, false, now.Add(time.Duration(l.rules.Recheck)), nil
	}
	req := AcquireRequest{Rules: l.rules, Pool: pool, Host: host, Want: want, Now: now}
	for try := 0; ; try++ {
		res, err := l.store.Acquire(ctx, &req)
		if err != nil || !res.OK {
			l.inFlight.Add(-1)
			return Ticket{}, false, res.Next, err
		}
		t := res.Ticket
		if !res.ExitGated {
			return t, true, time.Time{}, nil
		}
		g, err := l.store.TakeExit(ctx, &ExitRequest{Rules: l.rules, Exit: t.Exit, Now: now})
		if err == nil && g.OK {
			t.ExitHeld, t.Probe = true, g.Probe
			return t, true, time.Time{}, nil
		}
		// The exit filled up between the two operations: give the lane
		// back and try another exit (or report when the pinned one frees).
		if _, cerr := l.store.Release(ctx, &ReleaseRequest{Rules: l.rules, Ticket: t, Cancel: true, Now: now}); cerr != nil && err == nil {
			err = cerr
		}
		if err != nil || want.Pin != "" || try >= 2 {
			l.inFlight.Add(-1)
			next := g.Next
			if next.IsZero() {
				next = now.Add(time.Duration(l.rules.Recheck))
			}
			return Ticket{}, false, next, err
		}
		req.Want.Avoid = append(slices.Clip(req.Want.Avoid), t.Exit)
	}
}

// Wait blocks until a request to host may go, then returns its Ticket. It
// returns ctx's error if ctx ends first; nothing is held then.
func (l *Limiter) Wait(ctx context.Context, host string, want Want) (Ticket, error) {
	for {
		if err := ctx.Err(); err != nil {
			return Ticket{}, err
		}
		now := time.Now()
		t, ok, next, err := l.acquire(ctx, host, want, now)
		if err != nil {
			return Ticket{}, err
		}
		if ok {
			return t, nil
		}
		d := next.Sub(now)
		if d <= 0 {
			d = time.Duration(l.rules.Recheck)
		}
		tm := time.NewTimer(d)
		select {
		case <-ctx.Done():
			tm.Stop()
			return Ticket{}, ctx.Err()
		case <-tm.C:
		}
	}
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
	l.release(t, false, o, now)
}

// Cancel returns a ticket whose request was never sent: its token, quota and
// slots are given back exactly, and nothing is learned.
func (l *Limiter) Cancel(t Ticket, now time.Time) {
	l.release(t, true, Outcome{}, now)
}

func (l *Limiter) release(t Ticket, cancel bool, o Outcome, now time.Time) {
	ctx := context.Background()
	req := ReleaseRequest{Rules: l.rules, Ticket: t, Cancel: cancel, Outcome: o, Now: now}
	if !cancel && (o.Verdict == verdict.Throttled || o.Verdict == verdict.Busy) {
		req.Jitter = l.jitter()
	}
	ok, err := l.store.Release(ctx, &req)
	if err != nil {
		l.log.Warn("limit: release", "host", t.Host, "exit", t.Exit, "err", err)
	}
	if !ok {
		return
	}
	l.inFlight.Add(-1)
	if t.ExitHeld || (!cancel && o.Verdict == verdict.ProxyFailure) {
		er := ExitRelease{Rules: l.rules, Exit: t.Exit, Held: t.ExitHeld, Probe: t.Probe, Cancel: cancel, Verdict: o.Verdict, Now: now}
		if err := l.store.ReleaseExit(ctx, &er); err != nil {
			l.log.Warn("limit: release exit", "exit", t.Exit, "err", err)
		}
	}
	if !cancel && o.Verdict != verdict.OK {
		l.log.Debug("limit: outcome", "host", t.Host, "exit", t.Exit, "verdict", o.Verdict)
	}
}

// Snapshot returns the state of every host, lane and exit at now, with exit
// counters summed over lanes and early warnings attached to exits.
func (l *Limiter) Snapshot(now time.Time) Snapshot {
	s, err := l.store.Snapshot(context.Background(), l.rules, now)
	if err != nil {
		l.log.Warn("limit: snapshot", "err", err)
	}
	s.At = now
	s.InFlight = int(l.inFlight.Load())
	byID := make(map[string]*ExitSnapshot, len(s.Exits))
	for i := range s.Exits {
		byID[s.Exits[i].ID] = &s.Exits[i]
	}
	for _, h := range s.Hosts {
		for _, ln := range h.Lanes {
			e := byID[ln.Exit]
			if e == nil {
				continue
			}
			e.Requests += ln.Requests
			e.OK += ln.OK
			e.Throttled += ln.Throttled
			if ln.EarlyWarning {
				e.Warnings = append(e.Warnings, h.Host)
			}
		}
	}
	return s
}
