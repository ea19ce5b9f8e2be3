package strategy

import (
	"time"

	"golang.org/x/time/rate"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
)

// Workers is the number of workers of the per-worker strategy.
const Workers = 8

// perWorkerSpec is "Per-worker limiter, workers drawing from a shared pool"
// from reference/article-per-exit-token-buckets.txt: "each of 8 workers
// thinks it owns 30/min, but your pool rotation means they're landing on the
// same 20 exits. Effective per-exit load is somewhere between 30 and
// 240/min depending on rotation luck."
//
// Eight workers, each a sequential loop (one request in flight) with its own
// token bucket (golang.org/x/time/rate, burst 1) at the documented per-IP
// rate. Requests are sharded over the workers round-robin: request k goes to
// worker k mod 8, which waits for its own bucket and its own previous
// request even when another worker is free. Each request picks its exit from
// the shared pool at random. Nothing is learned from responses.
func perWorkerSpec() Spec {
	return Spec{
		Name:        PerWorker,
		Summary:     "8 workers, each with its own bucket at the per-IP rate, exits picked at random from the shared pool",
		Source:      "reference/article-per-exit-token-buckets.txt (per-worker design); golang.org/x/time/rate",
		Concurrency: Workers,
		New: func(env Env) (fetch.Limiter, error) {
			env, err := env.withDefaults()
			if err != nil {
				return nil, err
			}
			p := &perWorker{rot: newRotation(env)}
			for i := range p.w {
				p.w[i].bucket = rate.NewLimiter(rate.Limit(env.Rate), 1)
			}
			return &lockedLimiter{inner: p}, nil
		},
	}
}

type worker struct {
	bucket *rate.Limiter
	busy   bool
}

type perWorker struct {
	rot  rotation
	w    [Workers]worker
	next int // the worker the next request is sharded to
	tk   tickets[workerTicket]
}

type workerTicket struct {
	w int
	r *rate.Reservation
}

func (p *perWorker) acquire(host string, want limit.Want, now time.Time) (limit.Ticket, bool, time.Time, error) {
	exit, err := pinned(want, p.rot.exits)
	if err != nil {
		return limit.Ticket{}, false, time.Time{}, err
	}
	i := p.next
	w := &p.w[i]
	if w.busy {
		// Its previous request is still out: only its completion helps.
		return limit.Ticket{}, false, now, nil
	}
	r, next, ok := take(w.bucket, now)
	if !ok {
		return limit.Ticket{}, false, next, nil
	}
	w.busy = true
	p.next = (p.next + 1) % Workers
	if exit == "" {
		exit = p.rot.pick()
	}
	return p.tk.issue(host, exit, now, workerTicket{w: i, r: r}), true, time.Time{}, nil
}

func (p *perWorker) done(t limit.Ticket, _ limit.Outcome, _ time.Time) {
	if wt, ok := p.tk.take(t); ok {
		p.w[wt.w].busy = false
	}
}

func (p *perWorker) cancel(t limit.Ticket, now time.Time) {
	if wt, ok := p.tk.take(t); ok {
		p.w[wt.w].busy = false
		wt.r.CancelAt(now)
	}
}
