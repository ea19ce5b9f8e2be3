package run

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/memory"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/sim/strategy"
)

// LiveConfig is one crawl by the production engine (fetch.Engine over
// fetch.Core, as `exitgate crawl` runs it) with one strategy's limiter, on
// real sockets and in real time, against any site: a simulated one (Real)
// or a real rate limiter (internal/peerbench).
type LiveConfig struct {
	// Strategy is the limiter under test. Required.
	Strategy strategy.Spec
	// Exits are the routes to the site; their IDs are the limiter's exit
	// keys. Required.
	Exits []fetch.Member
	// Rate is the per-key rate the site documents, in requests per second:
	// the number hand-sized baselines are configured with
	// (strategy.Env.Rate). Default 1.
	Rate float64
	// Base is the site's base URL; the crawl fetches PageURL(Base, i, URLs)
	// for i in 1..URLs. Required.
	Base string
	// URLs is the size of the URL set. Required.
	URLs int
	// Duration stops the crawl this long after it started: requests in
	// flight finish and are recorded, the rest stays queued. 0: until every
	// URL is finished.
	Duration time.Duration
	// Seed makes the random choices repeatable (timing is real, so runs are
	// not). Default 1.
	Seed uint64
	// Timeout bounds one request, body included. Default 10 s.
	Timeout time.Duration
	// OnFinish, if set, is called for every URL that ends (done or
	// abandoned), from the engine's goroutines.
	OnFinish func(fetch.Finished)
	// Progress, if set, is called about every ProgressEvery (default 1 s)
	// from a goroutine the run owns.
	Progress      func(LiveProgress)
	ProgressEvery time.Duration
	// Logger is handed to the strategy (strategy.Env.Logger).
	Logger *slog.Logger
}

// LiveProgress is a live crawl's state at one instant.
type LiveProgress struct {
	// Start is when the engine started; At is the instant described.
	Start, At time.Time
	// Tally is the client's view: requests by status, per host and exit.
	Tally metrics.Snapshot
	// Counts are the frontier's URL counts.
	Counts frontier.Counts
}

// Live runs cfg and returns the crawl's state when it ended (At is when the
// engine returned). A run stopped by Duration is not an error; a cancelled
// ctx is.
func Live(ctx context.Context, cfg LiveConfig) (LiveProgress, error) {
	if cfg.Strategy.New == nil || len(cfg.Exits) == 0 || cfg.Base == "" || cfg.URLs <= 0 {
		return LiveProgress{}, fmt.Errorf("%w: a strategy, exits, a base URL and URLs are required", ErrConfig)
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = time.Second
	}
	keys := make([]string, len(cfg.Exits))
	for i, m := range cfg.Exits {
		keys[i] = m.ID
	}
	set := fetch.NewExitSet(cfg.Exits, nil, nil)
	lim, err := cfg.Strategy.New(strategy.Env{Exits: keys, Rate: cfg.Rate, Rand: rand.New(rand.NewPCG(cfg.Seed, 3)), Logger: cfg.Logger})
	if err != nil {
		return LiveProgress{}, fmt.Errorf("strategy %s: %w", cfg.Strategy.Name, err)
	}
	fr, err := memory.New(memory.Config{})
	if err != nil {
		return LiveProgress{}, err
	}
	defer fr.Close()
	if err := pushURLs(ctx, fr, cfg.Base, cfg.URLs); err != nil {
		return LiveProgress{}, err
	}
	onFinish := cfg.OnFinish
	if onFinish == nil {
		onFinish = func(fetch.Finished) {}
	}
	start := time.Now()
	tally := metrics.NewTally(start)
	core := fetch.NewCore(coreConfig(cfg.Strategy, cfg.Strategy.Concurrency, cfg.Seed, onFinish), fr, lim, tally)
	eng, err := fetch.NewEngine(fetch.EngineConfig{Exits: set, Timeout: cfg.Timeout}, core)
	if err != nil {
		return LiveProgress{}, err
	}
	state := func(now time.Time) LiveProgress {
		counts, _ := fr.Counts(context.WithoutCancel(ctx))
		return LiveProgress{Start: start, At: now, Tally: tally.Snapshot(now), Counts: counts}
	}
	if cfg.Duration > 0 {
		t := time.AfterFunc(cfg.Duration, eng.Stop)
		defer t.Stop()
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if cfg.Progress != nil {
		wg.Go(func() {
			t := time.NewTicker(cfg.ProgressEvery)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case now := <-t.C:
					cfg.Progress(state(now))
				}
			}
		})
	}
	err = eng.Run(ctx)
	close(stop)
	wg.Wait()
	if ctx.Err() != nil {
		return LiveProgress{}, ctx.Err()
	}
	if err != nil {
		return LiveProgress{}, err
	}
	return state(time.Now()), nil
}
