package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/sqlite"
	"github.com/exitgate/exitgate/internal/urlfile"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/pool"
	"github.com/exitgate/exitgate/report"
)

type crawlFlags struct {
	config             string
	proxies            string
	proxyTemplate      string
	sessions           int
	out                string
	concurrency        int
	perHostConcurrency int
	hostRate           string
	laneRate           string
	maxRetries         int
	maxWait            time.Duration
	duration           time.Duration
	timeout            time.Duration
	ignoreRobots       bool
	userAgent          string
	metricsAddr        string
	durable            bool
	progress           time.Duration
	verbose            bool
	logLevel           string
	echoURL            string
	exitIPHeader       string
}

func newCrawlCmd() *cobra.Command {
	var f crawlFlags
	cmd := &cobra.Command{
		Use:   "crawl [flags] URLFILE",
		Short: "Crawl a URL list through a proxy pool, politely, losing nothing",
		Long: `crawl fetches every URL of URLFILE (one per line, # comments allowed) through
the exits of a proxy pool, keeping one learned budget per (host, exit) lane and a
polite ceiling per host. Jobs live in a durable frontier in the output directory:
running the same command again resumes where the last run stopped, even after a
kill -9.

Outputs, in --out:
  results.jsonl   one line per finished URL (done or abandoned, with the reason)
  summary.json    429 ratio, time throttled, effective rate, per exit and per host
  bodies/         the body of each successful response, named by job id
  frontier.db     the frontier (SQLite)`,
		Example: `  exitgate crawl urls.txt
  exitgate crawl --proxies proxies.txt --host-rate 20/s urls.txt
  exitgate crawl --proxy-template 'http://user-session-{session}:pw@gw.example:7777' --sessions 50 urls.txt`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.config != "" {
				if err := applyConfigFile(cmd.Flags(), f.config); err != nil {
					return err
				}
			}
			return runCrawl(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "YAML file whose keys are these flags' names (without --); flags on the command line win")
	fl.StringVar(&f.proxies, "proxies", "", "file with one exit per line: http://user:pass@host:port, socks5://..., host:port, host:port:user:pass, bind:127.0.0.11[-127.0.0.30], direct")
	fl.StringVar(&f.proxyTemplate, "proxy-template", "", "proxy URL with a {session} placeholder: one sticky exit per session on a rotating gateway")
	fl.IntVar(&f.sessions, "sessions", 10, "number of sessions made from --proxy-template")
	fl.StringVar(&f.out, "out", "./exitgate-out", "output directory: results, summary, bodies and the frontier")
	fl.IntVar(&f.concurrency, "concurrency", 32, "requests in flight in total")
	fl.IntVar(&f.perHostConcurrency, "per-host-concurrency", 16, "requests in flight per host")
	fl.StringVar(&f.hostRate, "host-rate", "0", "politeness ceiling per host across all exits, e.g. 10/s or 600/min; 0 means none")
	fl.StringVar(&f.laneRate, "lane-rate", "30/min", "first guess of one lane's (host, exit) rate; it is learned from there")
	fl.IntVar(&f.maxRetries, "max-retries", 5, "retries per URL for errors and bans (429s have their own, larger budget; proxy failures are not charged)")
	fl.DurationVar(&f.maxWait, "max-wait", 5*time.Minute, "park threshold: a Retry-After longer than this parks the URL durably until it is due")
	fl.DurationVar(&f.duration, "duration", 0, "stop after this long and leave the rest queued (0: run until done)")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "timeout of one request, body included")
	fl.BoolVar(&f.ignoreRobots, "ignore-robots", false, "do not fetch or honour robots.txt (Disallow and Crawl-delay)")
	fl.StringVar(&f.userAgent, "user-agent", fetch.DefaultUserAgent, "User-Agent header, also used to pick the robots.txt group")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics while crawling, e.g. 127.0.0.1:9464")
	fl.BoolVar(&f.durable, "durable", false, "fsync the frontier on every change (SQLite synchronous=FULL); the default survives kill -9 but not power loss")
	fl.DurationVar(&f.progress, "progress", 10*time.Second, "interval of progress lines when stderr is not a terminal")
	fl.StringVar(&f.echoURL, "echo-url", "", "URL that answers with the caller's IP, fetched once through each exit at start so that lanes are keyed on the exit IP the server sees (exits behind one IP share lanes); empty: exits are keyed by their id")
	fl.StringVar(&f.exitIPHeader, "exit-ip-header", "", "response header in which the proxy provider reports the exit IP (e.g. X-Exit-IP); a sticky session whose IP changes moves to that IP's lanes")
	fl.StringVar(&f.logLevel, "log-level", "warn", "log to stderr at this level: debug (every learning decision of the limiter, and retries), info, warn or error")
	fl.BoolVar(&f.verbose, "verbose", false, "same as --log-level debug")
	return cmd
}

// crawlSetup is everything built from the flags before any work starts, so
// that bad input is refused before a single request is sent.
type crawlSetup struct {
	exits   []pool.Exit
	limCfg  limit.Config
	retry   fetch.RetryPolicy
	urlFile string
}

func buildCrawl(f crawlFlags, urlFile string) (crawlSetup, error) {
	var s crawlSetup
	var err error
	if f.concurrency < 1 || f.perHostConcurrency < 1 {
		return s, fmt.Errorf("--concurrency and --per-host-concurrency must be at least 1")
	}
	if s.limCfg.HostCeiling, err = limit.ParseRate(f.hostRate); err != nil {
		return s, fmt.Errorf("--host-rate: %w", err)
	}
	if s.limCfg.FirstGuess, err = limit.ParseRate(f.laneRate); err != nil {
		return s, fmt.Errorf("--lane-rate: %w", err)
	}
	if s.limCfg.FirstGuess.IsZero() {
		return s, fmt.Errorf("--lane-rate must be above zero")
	}
	if _, err := parseLogLevel(f.logLevel); err != nil {
		return s, err
	}
	s.limCfg.HostConcurrency = f.perHostConcurrency
	s.limCfg.MaxInFlight = f.concurrency
	s.retry = fetch.RetryPolicy{MaxRetries: f.maxRetries, MaxWait: f.maxWait}
	if f.maxRetries == 0 {
		s.retry.MaxRetries = -1 // the flag's 0 means none; the struct's 0 means default
	}

	if f.proxies != "" {
		exits, err := pool.ParseFile(f.proxies)
		if err != nil {
			return s, err
		}
		s.exits = append(s.exits, exits...)
	}
	if f.proxyTemplate != "" {
		exits, err := pool.FromTemplate(f.proxyTemplate, f.sessions)
		if err != nil {
			return s, fmt.Errorf("--proxy-template: %w", err)
		}
		s.exits = append(s.exits, exits...)
	}
	if len(s.exits) == 0 {
		s.exits = []pool.Exit{pool.DirectExit()}
	}
	if _, err := os.Stat(urlFile); err != nil {
		return s, err
	}
	s.urlFile = urlFile
	return s, nil
}

func runCrawl(ctx context.Context, stdout, stderr io.Writer, f crawlFlags, urlFile string) error {
	setup, err := buildCrawl(f, urlFile)
	if err != nil {
		return err
	}
	logLevel, _ := parseLogLevel(f.logLevel)
	if f.verbose {
		logLevel = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel}))
	setup.limCfg.Logger = logger

	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	sync := sqlite.SyncNormal
	if f.durable {
		sync = sqlite.SyncFull
	}
	fr, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(f.out, "frontier.db"), Sync: sync})
	if err != nil {
		return err
	}
	defer fr.Close()
	start := time.Now()
	if n, err := fr.Recover(ctx, start); err != nil {
		return err
	} else if n > 0 {
		fmt.Fprintf(stderr, "resumed: %d jobs that a stopped run had in flight are queued again\n", n)
	}
	added, bad, err := pushURLs(ctx, fr, setup.urlFile)
	for _, b := range bad {
		fmt.Fprintln(stderr, "skipped", b)
	}
	if err != nil {
		return err
	}
	counts, err := fr.Counts(ctx)
	if err != nil {
		return err
	}
	if counts.Total() == 0 {
		return fmt.Errorf("%s: no usable URLs", urlFile)
	}
	fmt.Fprintf(stderr, "exitgate: %d URLs new, %d in the frontier (%d done, %d abandoned, %d to do) through %d exits\n",
		added, counts.Total(), counts.Done, counts.Abandoned, counts.Unfinished(), len(setup.exits))

	lim, err := limit.New(setup.limCfg)
	if err != nil {
		return err
	}
	restoreLearned(f.out, lim, time.Now(), stderr)
	var identity *pool.Identity
	if f.echoURL != "" || f.exitIPHeader != "" {
		if identity, err = pool.NewIdentity(pool.IdentityConfig{Header: f.exitIPHeader, EchoURL: f.echoURL}); err != nil {
			return err
		}
	}
	members := make([]fetch.Member, len(setup.exits))
	for i, e := range setup.exits {
		t := e.Transport(pool.TransportConfig{ResponseHeaderTimeout: f.timeout})
		defer t.CloseIdleConnections()
		members[i] = fetch.Member{ID: e.ID(), Transport: t}
	}
	exits := fetch.NewExitSet(members, identity, lim.SetExits)
	if f.echoURL != "" {
		for id, err := range exits.Resolve(ctx, 16) {
			fmt.Fprintf(stderr, "exit %s: IP unknown, keyed by its id: %v\n", id, err)
		}
		fmt.Fprintf(stderr, "exitgate: %d exits resolve to %d distinct IPs\n", len(members), len(exits.Keys()))
	}

	tally := metrics.NewTally(start)
	if f.metricsAddr != "" {
		stop, err := serveMetrics(f.metricsAddr, tally, stderr)
		if err != nil {
			return err
		}
		defer stop()
	}

	core := fetch.NewCore(fetch.CoreConfig{
		Concurrency: f.concurrency,
		Retry:       setup.retry,
		Robots:      !f.ignoreRobots,
		UserAgent:   f.userAgent,
		Logger:      logger,
	}, fr, lim, tally)
	engine, err := fetch.NewEngine(fetch.EngineConfig{
		Exits:   exits,
		Timeout: f.timeout,
		BodyDir: filepath.Join(f.out, "bodies"),
		Header:  http.Header{"User-Agent": {f.userAgent}},
	}, core)
	if err != nil {
		return err
	}

	// First signal: stop taking work and let requests in flight finish.
	// Second: abort them; their jobs go back to the queue uncharged.
	runCtx, abort := context.WithCancel(ctx)
	defer abort()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer func() { signal.Stop(sigs); close(sigs) }()
	go func() {
		n := 0
		for range sigs {
			n++
			if n == 1 {
				fmt.Fprintln(stderr, "\nexitgate: stopping: finishing requests in flight (signal again to abort them; nothing is lost either way)")
				engine.Stop()
				continue
			}
			abort()
		}
	}()
	if f.duration > 0 {
		t := time.AfterFunc(f.duration, engine.Stop)
		defer t.Stop()
	}
	prog := startProgress(stderr, f.progress, fr, tally)
	stopSaving := make(chan struct{})
	saved := keepSavingLearned(f.out, lim, stopSaving, stderr)
	runErr := engine.Run(runCtx)
	close(stopSaving)
	<-saved
	prog.stop()

	// The report is written even after an error or a signal: it describes
	// the frontier as it is.
	wctx := context.WithoutCancel(ctx)
	if _, err := report.WriteResults(wctx, fr, f.out); err != nil && runErr == nil {
		runErr = err
	}
	counts, err = fr.Counts(wctx)
	if err != nil && runErr == nil {
		runErr = err
	}
	hostCaps, exitCaps := capacities(lim.Snapshot(time.Now()))
	sum := report.Summarize(counts, tally.Snapshot(time.Now()), hostCaps, exitCaps)
	if err := report.WriteSummary(f.out, sum); err != nil && runErr == nil {
		runErr = err
	}
	report.WriteTable(stdout, sum)
	if sum.Queued+sum.Parked > 0 {
		fmt.Fprintf(stdout, "\n%d URLs still to do (%d parked). Run the same command again to resume.\n", sum.Queued+sum.Parked, sum.Parked)
	}
	fmt.Fprintf(stdout, "Results: %s\n", filepath.Join(f.out, "results.jsonl"))
	return runErr
}

// pushURLs adds the URL file to the frontier in batches. Bad lines are
// returned, not fatal.
func pushURLs(ctx context.Context, fr frontier.Frontier, path string) (int, []*urlfile.LineError, error) {
	file, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer file.Close()
	added := 0
	batch := make([]frontier.NewJob, 0, 5000)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := fr.Push(ctx, batch)
		added += n
		batch = batch[:0]
		return err
	}
	bad, err := urlfile.Read(file, path, func(u string) error {
		batch = append(batch, frontier.NewJob{URL: u})
		if len(batch) == cap(batch) {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return added, bad, err
}

func serveMetrics(addr string, tally *metrics.Tally, stderr io.Writer) (func(), error) {
	reg := prometheus.NewRegistry()
	if err := metrics.Register(reg, tally); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(stderr, "metrics server:", err)
		}
	}()
	fmt.Fprintf(stderr, "metrics at http://%s/metrics\n", ln.Addr())
	return func() { srv.Close() }, nil
}

// capacities reads what the limiter learned: per host, its governing rate
// (the host rate when host-scoped, else the sum of its lanes); per exit, the
// sum of its lanes' rates over all hosts. Throttled time comes along: a
// host's cooldowns and pauses, an exit's lanes' cooldowns.
func capacities(s limit.Snapshot) (hosts, exits map[string]report.Capacity) {
	hosts = map[string]report.Capacity{}
	exits = map[string]report.Capacity{}
	for _, h := range s.Hosts {
		var sum float64
		for _, l := range h.Lanes {
			sum += l.Rate.Hz()
			c := exits[l.Exit]
			c.PerSecond += l.Rate.Hz()
			c.Throttled += l.ThrottledSeconds
			exits[l.Exit] = c
		}
		if !h.Rate.IsZero() {
			sum = h.Rate.Hz()
		}
		hosts[h.Host] = report.Capacity{PerSecond: sum, Scope: h.Scope.String(),
			Throttled: float64(h.Counters.ThrottledNs) / 1e9, Phase: h.Phase, Changes: h.Changes}
	}
	return hosts, exits
}

// parseLogLevel reads --log-level.
func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}
