package run

import (
	"context"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/metrics"
)

// Watcher watches a virtual run from the engine's side, as a monitor
// watches a live crawl (package monitor's tests use it): it may wrap the
// strategy's limiter, is handed the run's parts once they are built, and
// is ticked at every Config.WatchEvery of virtual time.
type Watcher interface {
	// Wrap returns the limiter the engine uses in place of lim.
	Wrap(lim fetch.Limiter) fetch.Limiter
	// Start is called once, before the first request.
	Start(w Watched)
	// Tick is called at each WatchEvery of virtual time, in order, between
	// the engine's decisions (never inside one).
	Tick(ctx context.Context, now time.Time)
}

// Watched is what a Watcher sees of a run.
type Watched struct {
	Core *fetch.Core
	// Limiter is the strategy's limiter, unwrapped.
	Limiter  fetch.Limiter
	Tally    *metrics.Tally
	Frontier frontier.Frontier
	Start    time.Time
}

// watch ticks the run's watcher up to now.
func (d *driver) watch(ctx context.Context, now time.Time) {
	if d.watcher == nil {
		return
	}
	for !d.nextWatch.After(now) {
		d.watcher.Tick(ctx, d.nextWatch)
		d.nextWatch = d.nextWatch.Add(d.watchEvery)
	}
}
