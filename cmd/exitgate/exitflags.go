package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/pool"
)

// exitFlags are the flags crawl and serve share: the config file, the
// exits, the limiter, how exits are identified, metrics and logging.
type exitFlags struct {
	config             string
	proxies            string
	proxyURLs          []string
	proxyTemplate      string
	sessions           int
	concurrency        int
	perHostConcurrency int
	hostRate           string
	laneRate           string
	echoURL            string
	exitIPHeader       string
	metricsAddr        string
	logLevel           string
	verbose            bool
}

// register adds the shared flags to fl.
func (f *exitFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.config, "config", "", "YAML `FILE` whose keys are these flags' names (without --); the command line and the environment win over it")
	fl.StringVar(&f.proxies, "proxies", "", "`FILE` with one exit per line: http://user:pass@host:port, socks5://..., host:port, host:port:user:pass, bind:127.0.0.11[-127.0.0.30], direct")
	fl.StringArrayVarP(&f.proxyURLs, "proxy", "x", nil, "one proxy `URL` (http://user:pass@host:port, socks5://..., or any line --proxies takes), as curl spells it; repeatable, and added to the exits of --proxies")
	fl.StringVar(&f.proxyTemplate, "proxy-template", "", "proxy `URL` with a {session} placeholder: one sticky exit per session on a rotating gateway")
	fl.IntVar(&f.sessions, "sessions", 10, "`N`umber of sessions made from --proxy-template")
	fl.IntVar(&f.concurrency, "concurrency", 32, "requests in flight in total (1 to 10000)")
	fl.IntVar(&f.perHostConcurrency, "per-host-concurrency", 16, "requests in flight per host (1 to 10000)")
	fl.StringVar(&f.hostRate, "host-rate", "0", "politeness ceiling per host across all exits, a `RATE` such as 10/s, 600/min, 7/2s or 100/h; 0 means none")
	fl.StringVar(&f.laneRate, "lane-rate", "30/min", "first guess of one lane's (host, exit) `RATE`, e.g. 30/min or 2/s; it is learned from there (never above --host-rate)")
	fl.StringVar(&f.echoURL, "echo-url", "", "`URL` that answers with the caller's IP, fetched once through each exit at start so that lanes are keyed on the exit IP the server sees (exits behind one IP share lanes); empty: exits are keyed by their id")
	fl.StringVar(&f.exitIPHeader, "exit-ip-header", "", "response `HEADER` in which the proxy provider reports the exit IP (e.g. X-Exit-IP); a sticky session whose IP changes moves to that IP's lanes")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`ADDR`/metrics while running, e.g. 127.0.0.1:9464")
	fl.StringVar(&f.logLevel, "log-level", "warn", "log to stderr at this `LEVEL`: debug (every learning decision of the limiter, and retries), info, warn or error")
	fl.BoolVar(&f.verbose, "verbose", false, "same as --log-level debug")
}

// limitConfig checks the limiter's flags and the log level, and returns the
// limiter's configuration (without its Logger).
func (f exitFlags) limitConfig() (limit.Config, error) {
	var c limit.Config
	var err error
	for _, x := range []struct {
		name string
		n    int
	}{{"--concurrency", f.concurrency}, {"--per-host-concurrency", f.perHostConcurrency}} {
		if x.n < 1 || x.n > maxConcurrency {
			return c, fmt.Errorf("%s %d: want 1 to %d", x.name, x.n, maxConcurrency)
		}
	}
	if c.HostCeiling, err = parseRate("--host-rate", f.hostRate); err != nil {
		return c, err
	}
	if c.FirstGuess, err = parseRate("--lane-rate", f.laneRate); err != nil {
		return c, err
	}
	if c.FirstGuess.IsZero() {
		return c, fmt.Errorf("--lane-rate must be above zero")
	}
	for _, r := range []struct {
		flag, raw string
		rate      limit.Rate
	}{{"--host-rate", f.hostRate, c.HostCeiling}, {"--lane-rate", f.laneRate, c.FirstGuess}} {
		// The limiter refuses it too, but only once the URL list was
		// loaded, exit 1, naming its own field (FirstGuess).
		if !r.rate.IsZero() && r.rate.Hz() < 1.0/(365*24*3600) {
			return c, fmt.Errorf("%s %s: below one request a year", r.flag, r.raw)
		}
	}
	if !c.HostCeiling.IsZero() && c.FirstGuess.Hz() > c.HostCeiling.Hz() {
		// No lane goes faster than its host: the first guess starts at
		// the ceiling (--host-rate 10/min under the default 30/min
		// stopped the crawl after its URLs were loaded).
		c.FirstGuess = c.HostCeiling
	}
	if _, err := parseLogLevel(f.logLevel); err != nil {
		return c, err
	}
	c.HostConcurrency = f.perHostConcurrency
	c.MaxInFlight = f.concurrency
	if _, err := limit.New(c); err != nil {
		return c, fmt.Errorf("the limiter's settings: %w", err) // before any work, as the flags above
	}
	return c, nil
}

// exits reads --proxies, -x and --proxy-template; none of them means one
// direct exit.
func (f exitFlags) exits() ([]pool.Exit, error) {
	var out []pool.Exit
	if f.proxies != "" || len(f.proxyURLs) > 0 {
		exits, err := loadProxies(f.proxies, f.proxyURLs)
		if errors.Is(err, errNoExits) && f.proxyTemplate != "" {
			err = nil // the template's exits, and -x's if any
		}
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			// Not there, not readable, a directory ("read DIR: is a
			// directory" named no flag). (Bad lines name the file and
			// line already.)
			err = fmt.Errorf("--proxies: %w", err)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, exits...)
	}
	if f.proxyTemplate != "" {
		exits, err := pool.FromTemplate(f.proxyTemplate, f.sessions)
		if err != nil {
			return nil, fmt.Errorf("--proxy-template: %w", err)
		}
		out = append(out, exits...)
	}
	if len(out) == 0 {
		out = []pool.Exit{pool.DirectExit()}
	}
	var notLocal []error
	for _, e := range out {
		if err := e.CheckLocal(); err != nil {
			notLocal = append(notLocal, err)
		}
	}
	if len(notLocal) > 0 {
		return nil, errors.Join(notLocal...)
	}
	return out, nil
}

// warnDirect tells w, when no exit was given (--proxies, -x,
// --proxy-template), that requests leave from this machine's own address:
// a misspelt variable or a forgotten flag must not expose it unsaid.
func (f exitFlags) warnDirect(w io.Writer) {
	if f.proxies == "" && len(f.proxyURLs) == 0 && f.proxyTemplate == "" {
		fmt.Fprintln(w, "exitgate: warning: no exits given (--proxies, -x or --proxy-template): requests leave from this machine's own address")
	}
}

// identity is how exits are keyed on their IP (--echo-url,
// --exit-ip-header); nil when neither is set.
func (f exitFlags) identity() (*pool.Identity, error) {
	if f.echoURL == "" && f.exitIPHeader == "" {
		return nil, nil
	}
	// Each flag checked alone, so that the error names the one at fault.
	if _, err := pool.NewIdentity(pool.IdentityConfig{Header: f.exitIPHeader}); err != nil {
		return nil, fmt.Errorf("--exit-ip-header: %w", err)
	}
	if _, err := pool.NewIdentity(pool.IdentityConfig{EchoURL: f.echoURL}); err != nil {
		return nil, fmt.Errorf("--echo-url: %w", err)
	}
	return pool.NewIdentity(pool.IdentityConfig{Header: f.exitIPHeader, EchoURL: f.echoURL})
}

// makeOutDir creates an --out directory and checks that files can be
// written in it, so that a directory the crawl cannot use is refused before
// any work starts (a read-only or pseudo file system, a file in the way)
// rather than failing on the frontier's first write.
func makeOutDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	probe, err := os.CreateTemp(dir, ".exitgate-write-check-*")
	if err != nil {
		return fmt.Errorf("--out %s: not writable: %w", dir, err)
	}
	name := probe.Name()
	err = probe.Close()
	if rmErr := os.Remove(name); err == nil {
		err = rmErr
	}
	if err != nil {
		return fmt.Errorf("--out %s: not writable: %w", dir, err)
	}
	return nil
}

// logger logs to w at --log-level (debug with --verbose). The standard
// log package's lines (net/http's own, "Unsolicited response received on
// idle HTTP channel") go to it too, at debug: they reached stderr raw,
// between the progress lines.
func (f exitFlags) logger(w io.Writer) *slog.Logger {
	level, _ := parseLogLevel(f.logLevel)
	if f.verbose {
		level = slog.LevelDebug
	}
	l := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	log.SetFlags(0)
	log.SetOutput(stdLogWriter{l})
	return l
}

// stdLogWriter writes the standard log package's lines to a logger.
type stdLogWriter struct{ l *slog.Logger }

func (s stdLogWriter) Write(p []byte) (int, error) {
	s.l.Debug(strings.TrimRight(string(p), "\n"), "from", "log")
	return len(p), nil
}

// settleVerbose makes --verbose and --log-level agree when both are given:
// the one given where it counts more wins (the command line over the
// environment over --config), and both at once in the same place, saying
// different things, are refused. EXITGATE_VERBOSE=true turned
// --log-level error on the command line into debug, unsaid.
func (f *exitFlags) settleVerbose(fl *pflag.FlagSet) error {
	if !f.verbose || !fl.Changed("verbose") || !fl.Changed("log-level") {
		return nil
	}
	if lvl, err := parseLogLevel(f.logLevel); err == nil && lvl == slog.LevelDebug {
		return nil // they agree
	}
	rv, rl := setWhere(fl.Lookup("verbose")), setWhere(fl.Lookup("log-level"))
	switch {
	case rv == rl:
		return fmt.Errorf("--verbose and --log-level %s disagree (--verbose is --log-level debug): give one", f.logLevel)
	case rl > rv:
		f.verbose = false
	}
	return nil
}

// setWhere ranks where a flag given was set: 3 the command line, 2 the
// environment, 1 --config.
func setWhere(f *pflag.Flag) int {
	switch {
	case len(f.Annotations[envSetAnnotation]) > 0:
		return 2
	case len(f.Annotations[configSetAnnotation]) > 0:
		return 1
	}
	return 3
}

// needsOneOf refuses flag given without any of the flags it works with
// (--metrics-hosts without --metrics-addr or --ui), as needs does.
func needsOneOf(fl *pflag.FlagSet, flag string, with ...string) error {
	if !fl.Changed(flag) {
		return nil
	}
	for _, w := range with {
		if fl.Changed(w) {
			return nil
		}
	}
	return fmt.Errorf("--%s needs --%s: without one of them, it does nothing", flag, strings.Join(with, " or --"))
}

// needs refuses a flag given without the flag it works with, each pair
// {flag, needed}: accepted, it would do nothing (--sessions without
// --proxy-template, --lease-ttl without --redis). Given means set on the
// command line, in the environment or in --config.
func needs(fl *pflag.FlagSet, pairs ...[2]string) error {
	for _, p := range pairs {
		if fl.Changed(p[0]) && !fl.Changed(p[1]) {
			return fmt.Errorf("--%s needs --%s: without it, it does nothing", p[0], p[1])
		}
	}
	return nil
}

// sayResolved asks the echo URL for the IP of each of the n exits of set
// and says what it found, the exits whose IP is unknown (keyed by their
// ids) counted apart: it said "2 exits resolve to 2 distinct IPs" of two
// exits whose IPs were both unknown.
func sayResolved(ctx context.Context, stderr io.Writer, set *fetch.ExitSet, n int) {
	unknown := 0
	for id, err := range set.Resolve(ctx, 16) {
		unknown++
		fmt.Fprintf(stderr, "exit %s: IP unknown, keyed by its id: %v\n", id, err)
	}
	if unknown == 0 {
		fmt.Fprintf(stderr, "exitgate: %d exits resolve to %d distinct IPs\n", n, len(set.Keys()))
		return
	}
	fmt.Fprintf(stderr, "exitgate: %d exits: %d resolve to %d distinct IPs, %d of unknown IP keyed by their ids\n",
		n, n-unknown, max(len(set.Keys())-unknown, 0), unknown)
}
