package peerbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"sync"
	"time"

	"github.com/exitgate/exitgate/sim/strategy"
)

// MatrixConfig is every target crawled by every strategy. The zero value of
// each optional field is its documented default.
type MatrixConfig struct {
	// Targets and Strategies are run target by target, each strategy in
	// turn. Required.
	Targets    []Target
	Strategies []strategy.Spec
	// Exits is the number of exits per run. Default 10.
	Exits int
	// Duration is each run's length. Default 120 s.
	Duration time.Duration
	// Parallel is how many runs go at once. Default 1. Each run has its own
	// server instance and its own exits, on a range of addresses no other
	// run uses at the same time.
	Parallel int
	// FirstIP is the first exit address of the first parallel slot.
	// Default DefaultFirstIP.
	FirstIP netip.Addr
	// Dir receives each run's files under <Dir>/runs/<target>/<strategy>.
	// Required.
	Dir string
	// CrawlBinary runs `exitgate crawl` from this binary instead of the
	// in-process engine (RunConfig.CrawlBinary).
	CrawlBinary string
	// Workers is every run's RunConfig.Workers: how many `exitgate crawl
	// --redis` processes share each run (Run defaults it and refuses more
	// than one without CrawlBinary). Default 1.
	Workers int
	// Seed is every run's seed. Default 1.
	Seed uint64
	// TargetLead is every run's RunConfig.TargetLead.
	TargetLead time.Duration
	// Log, if set, receives a line when a run starts and ends, and every
	// ProgressEvery (default 10 s) while it runs. Lines are written whole,
	// from the runs' goroutines.
	Log           io.Writer
	ProgressEvery time.Duration
}

// Matrix runs every target × strategy and returns the results target by
// target, each strategy in turn. A run that fails has its Error set, and the returned error joins
// every failure; the other runs go on. Cancelling ctx stops all runs.
func Matrix(ctx context.Context, cfg MatrixConfig) ([]Result, error) {
	if len(cfg.Targets) == 0 || len(cfg.Strategies) == 0 || cfg.Dir == "" {
		return nil, errors.New("peerbench: targets, strategies and a directory are required")
	}
	if cfg.Exits <= 0 {
		cfg.Exits = 10
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 1
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 120 * time.Second
	}
	if !cfg.FirstIP.IsValid() {
		cfg.FirstIP = DefaultFirstIP
	}
	addrs, err := ExitAddrs(cfg.FirstIP, cfg.Exits*cfg.Parallel)
	if err != nil {
		return nil, err
	}
	if cfg.CrawlBinary != "" {
		for _, s := range cfg.Strategies {
			if s.Name != strategy.Exitgate {
				return nil, fmt.Errorf("%w, not %s", ErrBinaryStrategy, s.Name)
			}
		}
	}
	type job struct {
		i, n int // result index, place in the run order
		t    Target
		s    strategy.Spec
	}
	// Results come target by target; runs go strategy by strategy, so that
	// runs at once are of one strategy: the ones that hammer (no-limiter)
	// load the machine together instead of skewing the timing of polite
	// runs beside them.
	var jobs []job
	for si, s := range cfg.Strategies {
		for ti, t := range cfg.Targets {
			jobs = append(jobs, job{ti*len(cfg.Strategies) + si, len(jobs) + 1, t, s})
		}
	}
	results := make([]Result, len(jobs))
	errs := make([]error, len(jobs))
	var logMu sync.Mutex
	logf := func(format string, args ...any) {
		if cfg.Log == nil {
			return
		}
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(cfg.Log, format+"\n", args...)
	}
	queue := make(chan job)
	var wg sync.WaitGroup
	for slot := range cfg.Parallel {
		first := addrs[slot*cfg.Exits]
		last := addrs[(slot+1)*cfg.Exits-1]
		wg.Go(func() {
			for j := range queue {
				tag := fmt.Sprintf("[%d/%d] %s × %s", j.n, len(jobs), j.t.Name, j.s.Name)
				logf("peerbench: %s: started, exits %v-%v", tag, first, last)
				rc := RunConfig{
					Target: j.t, Strategy: j.s, Exits: cfg.Exits, FirstIP: first, Duration: cfg.Duration,
					Dir: filepath.Join(cfg.Dir, "runs", j.t.Name, j.s.Name), CrawlBinary: cfg.CrawlBinary,
					Workers: cfg.Workers, Seed: cfg.Seed, TargetLead: cfg.TargetLead, ProgressEvery: cfg.ProgressEvery,
					Progress: func(p Progress) {
						allowed := float64(cfg.Exits) * j.t.Rate * p.Elapsed.Seconds()
						logf("peerbench: %s: %3.0fs/%.0fs, server: %d ok, %d 429, %d other (%.0f%% of allowed so far)",
							tag, p.Elapsed.Seconds(), p.Duration.Seconds(), p.OK, p.Limited, p.Other, 100*ratio(float64(p.OK), allowed))
					},
				}
				r, err := Run(ctx, rc)
				if err != nil {
					r.Error = err.Error()
					errs[j.i] = fmt.Errorf("%s × %s: %w", j.t.Name, j.s.Name, err)
					logf("peerbench: %s: FAILED: %v", tag, err)
				} else {
					logf("peerbench: %s: done in %.0fs: %s", tag, r.WallSeconds, r.Summary())
				}
				results[j.i] = r
			}
		})
	}
feed:
	for _, j := range jobs {
		select {
		case queue <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(queue)
	wg.Wait()
	if ctx.Err() != nil {
		return results, ctx.Err()
	}
	return results, errors.Join(errs...)
}
