package fetch

import (
	"context"
	"time"

	"github.com/exitgate/exitgate/frontier"
)

// ParkHost parks host's work durably until until, for a circuit breaker
// (package monitor): the jobs buffered for the host are parked in the
// frontier, due at until, with reason why, neither charged nor abandoned;
// the host takes no new job before until, and its due jobs still in the
// frontier wait there. Requests in flight finish and settle as usual
// (a retry goes back to the frontier, where it waits too). The rest of the
// crawl goes on. An earlier until never shortens a wait the host is already
// under. It returns how many buffered jobs it parked.
//
// ParkHost takes the Core's lock: call it from outside the Limiter's
// methods (which the Core calls with its lock held).
func (c *Core) ParkHost(ctx context.Context, host string, until time.Time, why string) (int, error) {
	c.mu.Lock()
	h := c.hosts[host]
	if h == nil {
		h = &hostState{}
		c.hosts[host] = h
	}
	if until.After(h.notBefore) {
		h.notBefore, h.limWait = until, false
	}
	h.pushback = why
	var fin []Finished
	var first error
	n := len(h.queue)
	for _, p := range h.queue {
		f, final, err := c.settleLocked(ctx, p.job, Fate{Kind: FatePark, At: h.notBefore, Reason: why, Tries: c.tries[p.job.ID]}, 0, frontier.Result{})
		if err != nil && first == nil {
			first = err
		}
		if final {
			fin = append(fin, f)
		}
	}
	c.buffered -= n
	h.queue = nil
	c.frDirty = true
	c.mu.Unlock()
	c.finish(fin)
	if n > 0 {
		c.cfg.Logger.Warn("circuit breaker: the host's URLs are parked", "host", host, "until", until.Format(time.RFC3339), "why", why, "urls", n)
	}
	return n, first
}
