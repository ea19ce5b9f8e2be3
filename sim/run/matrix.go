package run

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/exitgate/exitgate/sim/server"
	"github.com/exitgate/exitgate/sim/strategy"
)

// MatrixConfig is a bench: every strategy on every scenario, in virtual time.
type MatrixConfig struct {
	// Scenarios to run; nil means server.Scenarios().
	Scenarios []server.Scenario
	// Strategies to run; nil means strategy.All().
	Strategies []strategy.Spec
	// Base supplies Exits, URLs, Seed, Warmup, Bucket, MaxTime and
	// Concurrency for every run (Scenario and Strategy are set per run).
	// With URLs zero each scenario gets DefaultURLs, the same for all
	// strategies.
	Base Config
	// Parallel is how many runs go at once; 0 means GOMAXPROCS. Runs are
	// independent and deterministic, so the results do not depend on it.
	Parallel int
}

// ScenarioResult holds one scenario's results, one per strategy in the
// order they were given.
type ScenarioResult struct {
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Kind        server.Kind `json:"kind"`
	Headers     string      `json:"headers"`
	URLs        int         `json:"urls"`
	Results     []Result    `json:"results"`
}

// Matrix runs every strategy on every scenario. It stops at the first error.
func Matrix(ctx context.Context, mc MatrixConfig) ([]ScenarioResult, error) {
	scs := mc.Scenarios
	if scs == nil {
		scs = server.Scenarios()
	}
	specs := mc.Strategies
	if specs == nil {
		specs = strategy.All()
	}
	par := mc.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	out := make([]ScenarioResult, len(scs))
	type job struct{ i, j int }
	var jobs []job
	for i, sc := range scs {
		urls := mc.Base.URLs
		if urls == 0 {
			exits := mc.Base.Exits
			if exits == 0 {
				exits = 20
			}
			urls = DefaultURLs(sc, exits)
		}
		out[i] = ScenarioResult{
			Name: sc.Name, Description: sc.Description, Kind: sc.Kind,
			Headers: server.HeadersLabel(sc.Config), URLs: urls,
			Results: make([]Result, len(specs)),
		}
		for j := range specs {
			jobs = append(jobs, job{i, j})
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan job)
	)
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for jb := range next {
				cfg := mc.Base
				cfg.Scenario, cfg.Strategy, cfg.URLs = scs[jb.i], specs[jb.j], out[jb.i].URLs
				t0 := time.Now()
				r, err := Virtual(ctx, cfg)
				r.Wall = time.Since(t0)
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
					continue
				}
				out[jb.i].Results[jb.j] = r
			}
		}()
	}
	for _, jb := range jobs {
		select {
		case next <- jb:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return out, ctx.Err()
}
