package run

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/sim/exits"
	"github.com/exitgate/exitgate/sim/server"
	"github.com/exitgate/exitgate/sim/strategy"
)

// Site is a simulated site serving HTTP on a loopback listener. Several
// real runs may share one (each with its own exit addresses). Close stops
// it.
type Site struct {
	*server.Site
	// URL is the site's base URL (http://127.0.0.1:port).
	URL string
	srv *http.Server
	ln  net.Listener
}

// StartSite serves the scenario's site on 127.0.0.1 with a fresh port.
func StartSite(sc server.Scenario, seed uint64) (*Site, error) {
	cfg := sc.Config
	cfg.Rand = rand.New(rand.NewPCG(seed, 1))
	cfg.Record = true
	s, err := server.New(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return &Site{Site: s, URL: "http://" + ln.Addr().String(), srv: srv, ln: ln}, nil
}

// Close stops the listener and every connection.
func (s *Site) Close() error { return s.srv.Close() }

// RealConfig describes one real-socket run.
type RealConfig struct {
	// Scenario is the site's kind of limit. Required; rotating gateways are
	// not supported in real mode.
	Scenario server.Scenario
	// Strategy is the limiter under test. Required.
	Strategy strategy.Spec
	// Site, when set, is a running site to crawl (shared with another run);
	// nil starts one for this run.
	Site *Site
	// Exits is the number of local exits. Default 20.
	Exits int
	// FirstIP is the first exit's source address; the others follow.
	// Default 127.0.0.11. Runs sharing a site need disjoint ranges.
	FirstIP netip.Addr
	// URLs is the size of the URL set. Default 200.
	URLs int
	// Duration stops the crawl after this long even if URLs remain
	// (requests in flight finish); 0 means until done.
	Duration time.Duration
	// Seed makes the random choices repeatable (timing is real, so runs
	// are not). Default 1.
	Seed uint64
	// Warmup is the first window left out of the steady figures. Default
	// 60 s.
	Warmup time.Duration
	// Progress, if set, is called about every ProgressEvery (default 1 s)
	// from a goroutine the run owns, with the run's tally so far.
	Progress      func(metrics.Snapshot, Result)
	ProgressEvery time.Duration
	// Bucket is the timeline resolution. Default 1 s.
	Bucket time.Duration
}

// ErrRealRotating: the real-socket mode has no rotating gateway scenario.
var ErrRealRotating = errors.New("run: real sockets do not simulate rotating gateways")

// ErrRealHosts: the real-socket mode serves one site.
var ErrRealHosts = errors.New("run: real sockets serve one host, not a multi-host scenario")

// Real crawls the scenario's site through local exits with fetch.Engine,
// real sockets and real time, and measures it like Virtual does.
func Real(ctx context.Context, cfg RealConfig) (Result, error) {
	if cfg.Strategy.New == nil || cfg.Scenario.Name == "" {
		return Result{}, fmt.Errorf("%w: scenario and strategy are required", ErrConfig)
	}
	if cfg.Scenario.Kind == server.Rotating {
		return Result{}, ErrRealRotating
	}
	if len(cfg.Scenario.Hosts) > 0 {
		return Result{}, ErrRealHosts
	}
	if cfg.Exits <= 0 {
		cfg.Exits = 20
	}
	if !cfg.FirstIP.IsValid() {
		cfg.FirstIP = netip.AddrFrom4([4]byte{127, 0, 0, 11})
	}
	if cfg.URLs <= 0 {
		cfg.URLs = 200
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = DefaultWarmup
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = time.Second
	}
	if cfg.Bucket <= 0 {
		cfg.Bucket = time.Second
	}
	site := cfg.Site
	if site == nil {
		var err error
		if site, err = StartSite(cfg.Scenario, cfg.Seed); err != nil {
			return Result{}, err
		}
		defer site.Close()
	}
	pool, err := exits.New(exits.Config{Exits: cfg.Exits, FirstIP: cfg.FirstIP, Rand: rand.New(rand.NewPCG(cfg.Seed, 2))})
	if err != nil {
		return Result{}, err
	}
	proxies, err := exits.StartExits(exits.GatewayConfig{Pool: pool, ForwardProxyAuth: true})
	if err != nil {
		return Result{}, err
	}
	defer proxies.Close()
	var mu sync.Mutex
	start := time.Now()
	m := newMeter(start, cfg.Bucket)
	var members []fetch.Member
	var transports []*http.Transport
	ips := map[string]bool{}
	for i, ex := range pool.Exits() {
		ips[ex.IP.String()] = true
		u := *proxies.URLs()[i]
		u.User = url.User(proxyUser) // the one credential a per-credential site keys on
		tr := &http.Transport{Proxy: http.ProxyURL(&u), MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second}
		transports = append(transports, tr)
		members = append(members, fetch.Member{ID: ex.ID, Transport: &meterRT{rt: tr, mu: &mu, m: m}})
	}
	defer func() {
		for _, tr := range transports {
			tr.CloseIdleConnections()
		}
	}()
	keyCount := Keys(cfg.Scenario, cfg.Exits)
	result := func(p LiveProgress) Result {
		mu.Lock()
		defer mu.Unlock()
		r := m.result(resultInput{scenario: cfg.Scenario, strategy: cfg.Strategy.Name, site: site.Site,
			keys: keyCount, urls: cfg.URLs, end: p.At, counts: p.Counts, exits: cfg.Exits})
		// The site's record is the measure: this run's exits' requests.
		h := &host{name: site.URL, site: site.Site, keys: keyCount}
		if cfg.Scenario.Config.Key.By == server.KeyIP {
			h.only = ips
		}
		if err := r.measure([]*host{h}, start, p.At, p.At, cfg.Warmup); err != nil {
			r.SettleSeconds = -1
		}
		return r
	}
	lc := LiveConfig{
		Strategy: cfg.Strategy, Exits: members, Rate: site.Policy().Rate(), Base: site.URL, URLs: cfg.URLs,
		Duration: cfg.Duration, Seed: cfg.Seed, ProgressEvery: cfg.ProgressEvery,
		OnFinish: func(f fetch.Finished) {
			mu.Lock()
			m.finished(f)
			mu.Unlock()
		},
	}
	if cfg.Progress != nil {
		lc.Progress = func(p LiveProgress) { cfg.Progress(p.Tally, result(p)) }
	}
	p, err := Live(ctx, lc)
	if err != nil {
		return Result{}, err
	}
	r := result(p)
	r.Wall = p.At.Sub(m.start)
	return r, nil
}

// meterRT records every response (or transport error) that comes back
// through one exit: in real mode the Engine, not a driver, does the HTTP.
type meterRT struct {
	rt http.RoundTripper
	mu *sync.Mutex
	m  *meter
}

func (t *meterRT) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(r)
	fr := fetch.Response{Err: err}
	if err == nil {
		fr.Status = resp.StatusCode
	}
	now := time.Now()
	t.mu.Lock()
	t.m.response(fr, now)
	t.mu.Unlock()
	return resp, err
}
