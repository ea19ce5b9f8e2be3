package strategy

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/rendezvous"
)

// exitgateFleetSpec is exitgate's distributed mode as the simulator can run
// it: Workers limiters, each over its split of the pool's exits (the
// fleet's rendezvous hashing with bounded loads), sharing host-level state
// in memory (limit.LocalShare, where the workers of a real crawl share it
// through Redis: the same state, without the round trips and the refresh
// delay), the first worker searching every host's per-IP limit for all
// (fleet.Leads: the worker longest in the fleet). Every worker is present
// from the start: the joins and handovers of real workers starting one
// after another are not modelled (the real run of TestFleetVersusPerWorker
// has them). A request goes to the first
// worker, in turn, that has a lane free for it, as workers claiming from
// one frontier do.
func exitgateFleetSpec() Spec {
	return Spec{
		Name:       ExitgateFleet,
		Summary:    fmt.Sprintf("%d exitgate workers of one distributed crawl: exits split among them, host state shared, one worker searches each host's limit", Workers),
		Source:     "github.com/exitgate/exitgate/fleet, rendezvous, redisstate (limit.LocalShare in their place)",
		Sessions:   true,
		ResolveIPs: true,
		New: func(env Env) (fetch.Limiter, error) {
			env, err := env.withDefaults()
			if err != nil {
				return nil, err
			}
			return newFleet(env)
		},
	}
}

type fleetLimiter struct {
	workers []*limit.Limiter // those that own exits
	owner   map[string]int   // exit -> index in workers
	next    atomic.Uint32    // the worker asked first, in turn
}

func newFleet(env Env) (*fleetLimiter, error) {
	var members []string
	for i := range Workers {
		members = append(members, fmt.Sprintf("w%d", i))
	}
	share := limit.NewLocalShare()
	share.SetExits(len(env.Exits))
	f := &fleetLimiter{owner: map[string]int{}}
	for _, m := range members {
		own := rendezvous.Share(env.Exits, members, m)
		if len(own) == 0 {
			continue // more workers than exits: it stands by
		}
		i := len(f.workers)
		leads := func(string) bool { return i == 0 } // the longest present with exits, as fleet.Leads
		wenv := env
		if env.Logger != nil {
			wenv.Logger = env.Logger.With("worker", m) // whose change record
		}
		l, err := exitgateLimiter(wenv, own, share.Member(leads))
		if err != nil {
			return nil, err
		}
		for _, e := range own {
			f.owner[e] = i
		}
		f.workers = append(f.workers, l)
	}
	return f, nil
}

func (f *fleetLimiter) Acquire(host string, want limit.Want, now time.Time) (limit.Ticket, bool, time.Time, error) {
	if want.Pin != "" {
		i, ok := f.owner[want.Pin]
		if !ok {
			return limit.Ticket{}, false, time.Time{}, fmt.Errorf("%w: %q", limit.ErrUnknownExit, want.Pin)
		}
		return f.workers[i].Acquire(host, want, now)
	}
	first := int(f.next.Add(1)) % len(f.workers)
	var soonest time.Time
	for k := range f.workers {
		t, ok, next, err := f.workers[(first+k)%len(f.workers)].Acquire(host, want, now)
		if err != nil || ok {
			return t, ok, next, err
		}
		if soonest.IsZero() || (!next.IsZero() && next.Before(soonest)) {
			soonest = next
		}
	}
	return limit.Ticket{}, false, soonest, nil
}

func (f *fleetLimiter) Done(t limit.Ticket, o limit.Outcome, now time.Time) {
	f.DoneFaster(t, o, now)
}

// DoneFaster is Done, reporting whether the owning worker's lanes went
// faster, as each worker's own engine learns it from its own limiter.
func (f *fleetLimiter) DoneFaster(t limit.Ticket, o limit.Outcome, now time.Time) bool {
	if i, ok := f.owner[t.Exit]; ok {
		return f.workers[i].DoneFaster(t, o, now)
	}
	return false
}

func (f *fleetLimiter) Cancel(t limit.Ticket, now time.Time) {
	if i, ok := f.owner[t.Exit]; ok {
		f.workers[i].Cancel(t, now)
	}
}

func (f *fleetLimiter) Abandon(t limit.Ticket, now time.Time) {
	if i, ok := f.owner[t.Exit]; ok {
		f.workers[i].Abandon(t, now)
	}
}
