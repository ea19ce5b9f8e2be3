package fetch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/exitgate/exitgate/frontier"
)

// A crawl that sends nothing while URLs are left says why. Waiting is often
// right (a host's limiter, a Retry-After, work due later, leases other
// workers hold), and then the line names what it waits for; when nothing
// known holds the work back it is a stall, said as a warning with what the
// frontier and this worker hold. Three workers through Redis once sat idle
// for 50 s with 298 of 400 URLs to do and said nothing that could tell why.

// Stall is what holds a crawl that has sent nothing for a while.
type Stall struct {
	// At is when it was read.
	At time.Time
	// For is how long since a request last started or finished.
	For time.Duration
	// Counts are the frontier's, the whole crawl's on a shared frontier.
	Counts frontier.Counts
	// Buffered jobs are claimed by this worker and not yet sent.
	Buffered int
	// Waits are this worker's hosts with buffered jobs, soonest first;
	// a zero Until is a host held with no time given.
	Waits []HostWait
	// Due are hosts the frontier says have work to claim now.
	Due []string
	// Next is when the frontier says more work falls due; zero: never.
	Next time.Time
	// Held is why the frontier holds its work back on purpose (Holder),
	// "" when it does not.
	Held string
}

// Holder is a frontier that may hold its work back on purpose: a worker of
// a distributed crawl that owns no exit claims nothing, a Redis frontier
// claims nothing while Redis is away. Holding says why, "" when it does
// not. The engine looks for it through the frontier's wrappers.
type Holder interface {
	Holding() string
}

// holding is the first reason a frontier or one it wraps gives for holding
// work back.
func holding(fr frontier.Frontier) string {
	var why string
	frontier.Walk(fr, func(f frontier.Frontier) bool {
		if h, ok := f.(Holder); ok {
			why = h.Holding()
		}
		return why != ""
	})
	return why
}

// Repairer is a frontier that keeps something derived from its jobs that
// can go wrong and be rebuilt: a Redis frontier's schedule of which hosts
// have work due, which a worker killed between a host's change and the
// schedule's update leaves without the host. The engine asks it to rebuild
// at each stall line nothing known explains.
type Repairer interface {
	Repair(ctx context.Context) error
}

// repair asks the first Repairer among fr and the frontiers it wraps to
// rebuild; false if there is none.
func repair(ctx context.Context, fr frontier.Frontier) (found bool, err error) {
	frontier.Walk(fr, func(f frontier.Frontier) bool {
		r, ok := f.(Repairer)
		if ok {
			found, err = true, r.Repair(ctx)
		}
		return ok
	})
	return found, err
}

// Explained reports whether something known holds the work back: the
// frontier says why it holds it; or every host of this worker with work
// waits until a known time, and every host the frontier says has work due
// is one of them (its jobs go back to the frontier while it waits longer
// than half a lease); or nothing is claimed here and every URL left is
// leased (other workers'), or the queued ones fall due later. A frontier
// that says work is due now for a host nobody holds, or due within a
// second after all this time (a distributed worker's frontier says so when
// it knows of nothing due), while none is claimed, is a stall; so is a
// host held here with no time given while nothing is in flight.
func (s Stall) Explained() bool {
	if s.Held != "" {
		return true
	}
	for _, w := range s.Waits {
		if w.Until.IsZero() {
			return false
		}
	}
	if len(s.unclaimed()) > 0 {
		return false
	}
	if len(s.Waits) > 0 {
		return true
	}
	if s.Counts.Queued+s.Counts.Parked == 0 {
		return true
	}
	return s.Next.After(s.At.Add(time.Second))
}

// unclaimed are the hosts the frontier says have work due that no host of
// this worker waits for.
func (s Stall) unclaimed() []string {
	var out []string
	for _, h := range s.Due {
		if !slices.ContainsFunc(s.Waits, func(w HostWait) bool { return w.Host == h && !w.Until.IsZero() }) {
			out = append(out, h)
		}
	}
	return out
}

// String is the log line's text: what is left, what is held, and why.
func (s Stall) String() string {
	var b strings.Builder
	c := s.Counts
	fmt.Fprintf(&b, "nothing sent for %s with %d URLs unfinished (%d queued, %d leased, %d parked; %d claimed here)",
		roundIdle(s.For), c.Queued+c.Leased+c.Parked, c.Queued, c.Leased, c.Parked, s.Buffered)
	for i, w := range s.Waits {
		if i == 3 {
			fmt.Fprintf(&b, "; %d hosts more", len(s.Waits)-i)
			break
		}
		if w.Until.IsZero() {
			fmt.Fprintf(&b, "; %s held with no time given", w.Host)
			continue
		}
		fmt.Fprintf(&b, "; %s waits until %s (%s", w.Host, w.Until.Format("15:04:05"), w.Why)
		if !w.Since.IsZero() && s.At.Sub(w.Since) >= time.Second {
			fmt.Fprintf(&b, "; held back since %s", w.Since.Format("15:04:05"))
		}
		b.WriteString(")")
	}
	switch unclaimed := s.unclaimed(); {
	case s.Held != "":
		fmt.Fprintf(&b, "; %s", s.Held)
	case len(unclaimed) > 0:
		fmt.Fprintf(&b, "; the frontier says %s has work due now, and none could be claimed", strings.Join(unclaimed, ", "))
	case c.Queued+c.Parked == 0 && c.Leased <= s.Buffered:
		// All that is left is claimed here: the frontier's next time is
		// only these leases' end.
	case c.Queued+c.Parked == 0:
		b.WriteString("; the leased URLs are other workers' (or their leases run out)")
	case len(s.Waits) > 0:
		// The hosts' waits say it.
	case !s.Next.IsZero() && !s.Next.After(s.At.Add(time.Second)):
		b.WriteString("; the frontier says work falls due within a second, and none has been claimed")
	case !s.Next.IsZero():
		fmt.Fprintf(&b, "; the frontier's next work falls due at %s", s.Next.Format("15:04:05"))
	default:
		b.WriteString("; the frontier says nothing falls due")
	}
	return b.String()
}

// stall reads what holds the crawl at now, idle for idle.
func (c *Core) stall(ctx context.Context, now time.Time, idle time.Duration) (Stall, error) {
	s := Stall{At: now, For: idle}
	c.mu.Lock()
	s.Buffered = c.buffered
	for host, h := range c.hosts {
		if len(h.queue) == 0 && !h.notBefore.After(now) {
			continue // (a host held long gives its jobs back: it waits with none)
		}
		w := HostWait{Host: host, Since: h.waitFrom}
		if h.notBefore.After(now) {
			w.Until, w.Why = h.notBefore, h.pushback
			if w.Why == "" {
				w.Why = "its pace"
			}
		}
		s.Waits = append(s.Waits, w)
	}
	c.mu.Unlock()
	slices.SortFunc(s.Waits, func(a, b HostWait) int {
		switch {
		case a.Until.IsZero() == b.Until.IsZero():
			return a.Until.Compare(b.Until)
		case a.Until.IsZero():
			return 1 // held with no time given: last
		default:
			return -1
		}
	})
	var err error
	if s.Counts, err = c.fr.Counts(ctx); err != nil {
		return s, err
	}
	r, err := c.fr.Ready(ctx, now, 3)
	if err != nil {
		return s, err
	}
	s.Due, s.Next, s.Held = r.Hosts, r.Next, holding(c.fr)
	return s, nil
}

// stallWatch says when the engine has sent nothing for a while with work
// left: after StallAfter, then after twice as long each time up to
// stallSayCap, and once more when requests go again.
type stallWatch struct {
	after  time.Duration
	said   time.Duration // the idle time last said; 0: none yet
	saidAt time.Time
}

// stallSayCap is the longest between two lines on one stall.
const stallSayCap = 10 * time.Minute

// check is called by the engine's loop when it started nothing, with the
// time of the last request's start or end.
func (w *stallWatch) check(ctx context.Context, c *Core, now, active time.Time) {
	if w.after <= 0 || c.Inflight() > 0 {
		return
	}
	idle := now.Sub(active)
	next := w.after
	if w.said > 0 {
		next = w.said + min(w.said, stallSayCap)
	}
	if idle < next {
		return
	}
	s, err := c.stall(ctx, now, idle)
	if err != nil {
		if why := holding(c.fr); why != "" {
			c.cfg.Logger.Info(fmt.Sprintf("engine: nothing sent for %s; %s", roundIdle(idle), why))
		} else {
			c.cfg.Logger.Warn(fmt.Sprintf("engine: nothing sent for %s; the frontier could not be read", roundIdle(idle)), "err", err)
		}
	} else if s.Counts.Queued+s.Counts.Leased+s.Counts.Parked == 0 {
		return // finishing: nothing left
	} else if s.Explained() {
		c.cfg.Logger.Info("engine: " + s.String())
	} else {
		c.cfg.Logger.Warn("engine: " + s.String())
		if found, err := repair(ctx, c.fr); found {
			c.mu.Lock()
			c.frDirty = true // claim again at once
			c.mu.Unlock()
			if err != nil {
				c.cfg.Logger.Warn("engine: asked the frontier to rebuild its schedule", "err", err)
			} else {
				c.cfg.Logger.Info("engine: asked the frontier to rebuild its schedule")
			}
		}
	}
	w.said, w.saidAt = idle, now
}

// active is called when a request starts or ends after a stall was said.
func (w *stallWatch) active(c *Core, now time.Time) {
	if w.said == 0 {
		return
	}
	c.cfg.Logger.Info(fmt.Sprintf("engine: sending again after %s", roundIdle(w.said+now.Sub(w.saidAt))))
	w.said = 0
}

// roundIdle rounds an idle time for the log: to a tenth of a second under
// ten seconds, to the second above.
func roundIdle(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
