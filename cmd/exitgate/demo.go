package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/exitgate/exitgate/metrics"
	simrun "github.com/exitgate/exitgate/sim/run"
	"github.com/exitgate/exitgate/sim/server"
	"github.com/exitgate/exitgate/sim/strategy"
)

type demoFlags struct {
	scenario string
	exits    int
	urls     int
	duration time.Duration
	seed     uint64
}

func newDemoCmd() *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo [flags]",
		Short: "Crawl a simulated rate-limited site through 20 local exits, next to a global per-domain limiter",
		Long: `demo starts a simulated rate-limited site on 127.0.0.1 and two sets of local
exits (proxies dialing from their own 127.0.0.x source addresses, so the site
sees each exit as its own client), then crawls the same URL set twice at the
same time, with real sockets: once with exitgate, once with a global
per-domain limiter set to the site's per-IP rate. Live progress goes to
stderr; the summary compares both side by side.

Each crawl stops when its URLs are done or after --duration; the time to
finish the rest is extrapolated from the rate reached.`,
		Example: `  exitgate demo
  exitgate demo --urls 300 --duration 20s
  exitgate demo --scenario per-ip-fixed-window --exits 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.scenario, "scenario", "per-ip-token-bucket", "simulated site (a per-IP scenario of one host of exitgate bench --help)")
	fl.IntVar(&f.exits, "exits", 20, "local exits per crawl, 1 to 100 (each crawl gets its own addresses from 127.0.0.11 up)")
	fl.IntVar(&f.urls, "urls", 600, "URLs per crawl (at most 100000)")
	fl.DurationVar(&f.duration, "duration", 45*time.Second, "longest time each crawl runs (both run at once)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the random choices (timing is real, so runs differ a little)")
	return cmd
}

func runDemo(ctx context.Context, stdout, stderr io.Writer, f demoFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	sc, ok := server.ScenarioByName(f.scenario)
	if !ok {
		return usageError(fmt.Errorf("unknown scenario %q (see exitgate bench --help)", f.scenario))
	}
	if sc.Kind != server.PerIP || len(sc.Hosts) > 0 {
		// The demo's two crawls share one site: a limit of the whole
		// site (or of a credential) is theirs together, and the figures
		// of each read as the pair's (host-scoped showed both columns at
		// 113% and "exitgate 0.1x as fast"); a rotating gateway and many
		// hosts do not run on real sockets here.
		return usageError(fmt.Errorf("--scenario %s: the demo runs per-IP scenarios of one host (its two crawls share the site); %s is for exitgate bench", f.scenario, sc.Kind))
	}
	switch {
	case f.exits < 1 || f.exits > 100:
		return usageError(fmt.Errorf("--exits %d: want 1 to 100", f.exits))
	case f.urls < 1 || f.urls > maxDemoURLs:
		// The demo holds its URLs in memory: 3,000,000 took 2.5 GB, and
		// 100,000,000 ran on past --duration while it built them.
		return usageError(fmt.Errorf("--urls %d: want 1 to %d", f.urls, maxDemoURLs))
	case f.duration <= 0:
		return usageError(fmt.Errorf("--duration %v: want above 0", f.duration))
	}
	site, err := simrun.StartSite(sc, f.seed)
	if err != nil {
		return err
	}
	defer site.Close()
	names := []string{strategy.Exitgate, strategy.GlobalPerDomain}
	fmt.Fprintf(stderr, "site %s: %s\n%d local exits per crawl, %d URLs, up to %s\n", site.URL, sc.Description, f.exits, f.urls, f.duration)

	var (
		mu      sync.Mutex
		live    = make([]simrun.Result, len(names))
		results = make([]simrun.Result, len(names))
		errs    = make([]error, len(names))
		wg      sync.WaitGroup
	)
	// On a terminal, one bar per crawl (mpb); otherwise a line a second.
	var bars *mpb.Progress
	barOf := make([]*mpb.Bar, len(names))
	if barTerminal(stderr) {
		bars = mpb.New(mpb.WithOutput(stderr), mpb.WithWidth(30), mpb.WithRefreshRate(250*time.Millisecond))
		for i, name := range names {
			barOf[i] = bars.AddBar(int64(f.urls),
				mpb.PrependDecorators(decor.Name(name, decor.WCSyncSpaceR), decor.CountersNoUnit("%d/%d", decor.WCSyncSpace), decor.Percentage(decor.WCSyncSpace)),
				mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO), decor.Any(func(decor.Statistics) string {
					mu.Lock()
					defer mu.Unlock()
					return fmt.Sprintf("  %.1f ok/s, 429 %.1f%%", live[i].SuccessRate, 100*live[i].Ratio429)
				})))
		}
	}
	for i, name := range names {
		spec, _ := strategy.ByName(name)
		first := netip.AddrFrom4([4]byte{127, 0, 0, byte(11 + i*(f.exits+10))})
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = simrun.Real(ctx, simrun.RealConfig{
				Scenario: sc, Strategy: spec, Site: site, Exits: f.exits, FirstIP: first,
				URLs: f.urls, Duration: f.duration, Seed: f.seed,
				Progress: func(_ metrics.Snapshot, r simrun.Result) {
					mu.Lock()
					live[i] = r
					mu.Unlock()
					if barOf[i] != nil {
						barOf[i].SetCurrent(int64(r.Done + r.Abandoned))
					}
				},
			})
			// Its end, as the table will say it: the last progress
			// report came a moment before (585/600 shown until the
			// other crawl ended, for one that finished all 600).
			mu.Lock()
			live[i] = results[i]
			mu.Unlock()
			if barOf[i] != nil && errs[i] == nil {
				barOf[i].SetCurrent(int64(results[i].Done + results[i].Abandoned))
			}
		}()
	}
	done := make(chan struct{})
	var pg sync.WaitGroup
	if bars == nil {
		pg.Go(func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			start := time.Now()
			for last := false; !last; {
				select {
				case <-done:
					last = true // one line more: where each crawl ended
				case <-t.C:
				}
				mu.Lock()
				line := fmt.Sprintf("%3.0fs", time.Since(start).Seconds())
				for i, name := range names {
					r := live[i]
					line += fmt.Sprintf("  |  %s: %d/%d done, %.1f ok/s, 429 %.1f%%", name, r.Done+r.Abandoned, f.urls, r.SuccessRate, 100*r.Ratio429)
				}
				mu.Unlock()
				fmt.Fprintln(stderr, line)
			}
		})
	}
	wg.Wait()
	close(done)
	pg.Wait()
	if bars != nil {
		for _, b := range barOf {
			if !b.Completed() {
				b.Abort(false) // keep it where the crawl stopped
			}
		}
		bars.Wait()
	}
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("%s: %w", names[i], err)
		}
	}
	return demoSummary(stdout, f, results)
}

func demoSummary(w io.Writer, f demoFlags, rs []simrun.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(label string, cell func(simrun.Result) string) {
		fmt.Fprintf(tw, "%s\t", label)
		for _, r := range rs {
			fmt.Fprintf(tw, "%s\t", cell(r))
		}
		fmt.Fprintln(tw)
	}
	row("", func(r simrun.Result) string { return r.Strategy })
	row("URLs done", func(r simrun.Result) string { return fmt.Sprintf("%d / %d", r.Done, f.urls) })
	row("abandoned", func(r simrun.Result) string { return fmt.Sprint(r.Abandoned) })
	row("elapsed", func(r simrun.Result) string { return fmt.Sprintf("%.1fs", r.SecondsToFinish) })
	row("successes / s", func(r simrun.Result) string { return fmt.Sprintf("%.2f", r.SuccessRate) })
	row("allowed / s", func(r simrun.Result) string { return fmt.Sprintf("%.2f", r.AllowedRate) })
	row("utilization", func(r simrun.Result) string { return fmt.Sprintf("%.1f%%", 100*r.Utilization) })
	row("429 ratio", func(r simrun.Result) string { return fmt.Sprintf("%.2f%%", 100*r.Ratio429) })
	row("requests", func(r simrun.Result) string { return fmt.Sprint(r.Requests) })
	row("retries / success", func(r simrun.Result) string { return fmt.Sprintf("%.2f", r.RetriesPerSuccess) })
	row("time for all URLs", func(r simrun.Result) string {
		if r.Finished {
			return fmt.Sprintf("%.1fs", r.SecondsToFinish)
		}
		if r.SuccessRate <= 0 {
			return "?"
		}
		left := float64(f.urls - r.Done - r.Abandoned)
		return fmt.Sprintf("~%.0fs (est.)", r.SecondsToFinish+left/r.SuccessRate)
	})
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rs) == 2 && rs[1].SuccessRate > 0 {
		_, err := fmt.Fprintf(w, "\nexitgate fetched %.1f× as fast as the global per-domain limiter on the same site.\n", rs[0].SuccessRate/rs[1].SuccessRate)
		return err
	}
	return nil
}

// maxDemoURLs bounds demo's --urls: its crawls are in memory, and at its
// pace a crawl of 45 s does not reach a few thousand.
const maxDemoURLs = 100_000
