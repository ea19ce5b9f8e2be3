package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"

	"github.com/exitgate/exitgate/dashboard"
	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/monitor"
)

// monitorFlags are crawl's monitoring flags: the live dashboard, 429
// budgets, the circuit breaker and the metrics' exit series.
type monitorFlags struct {
	ui              string
	budget          string
	hostBudgets     []string
	budgetWindow    time.Duration
	alertAfter      time.Duration
	breakerAfter    time.Duration
	breakerCooldown time.Duration
	metricsExits    int
	metricsHosts    int
	linger          time.Duration
}

func addMonitorFlags(fl *pflag.FlagSet, f *monitorFlags) {
	fl.StringVar(&f.ui, "ui", "", "serve the live dashboard at http://`ADDR`/ (and its state at /api/state, /metrics too) while crawling, e.g. 127.0.0.1:8080; `exitgate status ADDR` prints it in a terminal")
	fl.StringVar(&f.budget, "budget", "1%", "429 budget of a host: the share of its responses that may be 429 over --budget-window (1%, 0.5%, 0.01); over it for --alert-after raises an alert")
	fl.StringArrayVar(&f.hostBudgets, "host-budget", nil, "429 budget of one host, `HOST=RATIO` (api.example.com=0.1%; a port if not 80 or 443, or the site's http(s) URL); repeatable; in --config also a mapping (host-budget: {api.example.com: 0.1%})")
	fl.DurationVar(&f.budgetWindow, "budget-window", time.Minute, "span of the rolling 429 ratio judged against the budget")
	fl.DurationVar(&f.alertAfter, "alert-after", 3*time.Minute, "a host over its 429 budget this long raises an alert (a WARN line, a metric, an event in summary.json and on the dashboard)")
	fl.DurationVar(&f.breakerAfter, "breaker-after", 5*time.Minute, "a host over its 429 budget this long has its circuit breaker opened: its URLs are parked for --breaker-cooldown, then one probe; 0: no breaker")
	fl.DurationVar(&f.breakerCooldown, "breaker-cooldown", 5*time.Minute, "how long an open circuit breaker parks a host before one probe (doubling with each failed probe, up to an hour, or to itself when longer)")
	fl.IntVar(&f.metricsExits, "metrics-exits", 50, "exits with series of their own in exitgate_exit_requests_total (the first to answer); the others are summed under exit=\"_other\"; 0: none")
	fl.DurationVar(&f.linger, "linger", 0, "keep --ui and --metrics-addr up this long after the crawl ends (a signal ends it sooner), so that a scrape or a look at the dashboard sees its final counts; 0: they close with the crawl")
	fl.IntVar(&f.metricsHosts, "metrics-hosts", 200, "hosts with series of their own in the per-host counters (exitgate_requests_total and the like; the first to answer); the others are summed under host=\"_other\"; 0: none")
}

// monitorConfig checks the monitoring flags and returns the monitor's
// configuration.
func monitorConfig(f monitorFlags) (monitor.Config, error) {
	var c monitor.Config
	var err error
	if c.Budget, err = parseShare("--budget", f.budget); err != nil {
		return c, err
	}
	for _, hb := range f.hostBudgets {
		for part := range strings.SplitSeq(hb, ",") {
			// The ratio is after the last "=": a site's URL may hold one.
			p := strings.TrimSpace(part)
			i := strings.LastIndexByte(p, '=')
			host, val, ok := p[:max(i, 0)], p[i+1:], i >= 0
			if !ok || strings.TrimSpace(host) == "" {
				return c, fmt.Errorf("--host-budget %q: want HOST=RATIO, e.g. api.example.com=0.5%%", part)
			}
			b, err := parseShare("--host-budget "+host, val)
			if err != nil {
				return c, err
			}
			key, err := budgetHostKey(strings.TrimSpace(host))
			if err != nil {
				return c, fmt.Errorf("--host-budget %q: %v", part, err)
			}
			if c.Budgets == nil {
				c.Budgets = map[string]float64{}
			}
			c.Budgets[key] = b
		}
	}
	if err := checkDurations([]durationFlag{
		{"--budget-window", f.budgetWindow, false, 0},
		{"--alert-after", f.alertAfter, false, 0},
		{"--breaker-after", f.breakerAfter, true, 0}, // 0: no breaker
		{"--breaker-cooldown", f.breakerCooldown, false, 0},
	}); err != nil {
		return c, err
	}
	c.Window, c.AlertAfter, c.BreakAfter, c.Cooldown = f.budgetWindow, f.alertAfter, f.breakerAfter, f.breakerCooldown
	// Doubled up to an hour, or to itself when longer (2h was refused as
	// "CooldownMax is below Cooldown", a field no flag sets).
	c.CooldownMax = max(time.Hour, f.breakerCooldown)
	if f.breakerAfter == 0 {
		c.BreakAfter = -1
	} else if f.breakerAfter < f.alertAfter {
		return c, fmt.Errorf("--breaker-after %v is below --alert-after %v: the alert comes first", f.breakerAfter, f.alertAfter)
	}
	if f.metricsExits < 0 {
		return c, fmt.Errorf("--metrics-exits %d: want 0 or more", f.metricsExits)
	}
	if f.linger < 0 {
		return c, fmt.Errorf("--linger %v: want 0 or more", f.linger)
	}
	if f.metricsHosts < 0 {
		return c, fmt.Errorf("--metrics-hosts %d: want 0 or more", f.metricsHosts)
	}
	if _, err := monitor.New(c); err != nil {
		return c, err
	}
	return c, nil
}

// budgetHostKey is the host key a --host-budget's HOST stands for, as the
// crawl keys the host: an internationalised name in punycode, an address in
// one spelling, a port kept unless it is http's default (bücher.example was
// accepted and matched no host, xn--bcher-kva.example's budget unchanged).
func budgetHostKey(host string) (string, error) {
	raw := "http://" + host + "/"
	switch {
	case strings.Contains(host, "://"):
		// A URL's scheme says which port is the default.
		raw = strings.TrimSuffix(host, "/") + "/"
	case strings.HasSuffix(host, ":443"):
		// https's own port: the crawl keys https://api.example.com/ as
		// api.example.com, and HOST:443 matched nothing.
		raw = "https://" + host + "/"
	}
	u, err := url.Parse(raw)
	if err == nil && strings.Contains(host, "://") {
		u.Path, u.RawQuery, u.Fragment = "/", "", "" // a URL of the site: its host is what counts
	}
	if err != nil || u.Hostname() == "" || u.Path != "/" || u.User != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("%q is no host (want a name or an address, with a port if not 80 or 443, or an http(s) URL of the site)", host)
	}
	return fetch.DefaultHostKey(u), nil
}

// parseShare reads a share as a percentage ("1%", "0.5 %") or a fraction
// ("0.01"), above 0 and below 1.
func parseShare(flag, s string) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if p, ok := strings.CutSuffix(t, "%"); ok {
		t, scale = strings.TrimSpace(p), 0.01
	}
	v, err := strconv.ParseFloat(t, 64)
	v *= scale
	if err != nil || !(v > 0 && v < 1) {
		return 0, fmt.Errorf("%s %q: want a share above 0 and below 1, as a percentage (1%%) or a fraction (0.01)", flag, s)
	}
	return v, nil
}

// newRegistry gathers everything /metrics exposes: the Go and process
// collectors, the run's tally, the monitor and the crawl's state gauges.
func newRegistry(tally *metrics.Tally, mon *monitor.Monitor, exitSeries, hostSeries int) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	for _, c := range crawlCollectors(tally, mon, exitSeries, hostSeries) {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// crawlCollectors are the collectors of newRegistry (mon may be nil).
func crawlCollectors(tally *metrics.Tally, mon *monitor.Monitor, exitSeries, hostSeries int) []prometheus.Collector {
	// The flags' 0 means none; the options' 0 means the default.
	if exitSeries == 0 {
		exitSeries = -1
	}
	if hostSeries == 0 {
		hostSeries = -1
	}
	cs := append(metrics.RuntimeCollectors(), metrics.Collectors(tally, metrics.Options{ExitSeries: exitSeries, HostSeries: hostSeries})...)
	if mon != nil {
		cs = append(cs, mon.Collector(), metrics.StateCollector(mon.MetricsState))
	}
	return cs
}

// listenAddr takes an address for a server of the crawl before any work
// starts, so that a bad or busy address is refused before the frontier is
// even created.
func listenAddr(flag, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return ln, nil
}

// serve serves h on ln until the returned function is called; what is
// logs its address on stderr.
func serve(ln net.Listener, h http.Handler, what string, stderr io.Writer) func() {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(stderr, what+" server:", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close() // event streams do not end by themselves
		}
	}
}

// uiHandler serves the dashboard of mon, with /metrics from reg.
func uiHandler(mon *monitor.Monitor, reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", dashboard.Handler(mon, dashboard.Options{}))
	return mux
}

// linger keeps the command, and with it its dashboard and metrics
// endpoints, alive for d after the crawl ended, or until a signal.
func linger(d time.Duration, stderr io.Writer) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	fmt.Fprintf(stderr, "exitgate: the dashboard and metrics stay up for %v (--linger); a signal ends it\n", d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
