package gateway

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exitgate/exitgate/limit"
)

// unlimited is a limiter whose pacing never holds a request back: the
// benchmarks measure the gateway's own cost (each request still takes and
// returns a ticket and is judged and learned from).
func unlimited(tb testing.TB) *limit.Limiter {
	tb.Helper()
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(1e7), MaxLaneRate: limit.PerSecond(1e7),
		MaxInFlight: 1 << 16, HostConcurrency: 1 << 16})
	if err != nil {
		tb.Fatal(err)
	}
	return lim
}

// benchOrigin serves size bytes per request after a service time drawn
// evenly from half to one and a half think, so that clients do not march
// in lockstep waves (which would measure how long a burst of every client
// at once takes, not a request).
func benchOrigin(tb testing.TB, size int, think time.Duration) *url.URL {
	tb.Helper()
	body := []byte(strings.Repeat("x", size))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if think > 0 {
			time.Sleep(think/2 + rand.N(think)) // the server's own service time
		}
		w.Write(body)
	})}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Close() })
	return &url.URL{Scheme: "http", Host: ln.Addr().String(), Path: "/page"}
}

// bareProxy is the least a plain-HTTP forward proxy in Go does: each
// request sent on with net/http's Transport and its answer copied back, no
// limiter, no checks, no retries. The benchmark runs it beside the gateway
// so that what the gateway's extra hop costs flat out is told apart from
// what the gateway adds to such a hop.
func bareProxy(tb testing.TB, conns int) *url.URL {
	tb.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: conns, DisableCompression: true}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.Header.Del("Proxy-Connection")
		resp, err := tr.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Close(); tr.CloseIdleConnections() })
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

// tcpRelay listens on loopback and splices each connection to origin byte
// for byte, both ways, parsing nothing: the bound on any proxy's extra hop
// (one more connection a client's, each byte read and written once more),
// with none of HTTP's work. Clients reach origin by its address.
func tcpRelay(tb testing.TB, origin *url.URL) *url.URL {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				o, err := net.Dial("tcp", origin.Host)
				if err != nil {
					return
				}
				defer o.Close()
				done := make(chan struct{})
				go func() {
					io.Copy(o, c)
					o.(*net.TCPConn).CloseWrite()
					close(done)
				}()
				io.Copy(c, o)
				c.(*net.TCPConn).CloseWrite()
				<-done
			})
		}
	}()
	tb.Cleanup(func() { ln.Close(); wg.Wait() })
	u := *origin
	u.Host = ln.Addr().String()
	return &u
}

// load is one run of a load generator: clients concurrent keep-alive
// clients send n requests in all.
type load struct {
	reqs    int
	elapsed time.Duration
	lat     []time.Duration // sorted
	// warm is lat without each client's first request, the one that
	// opened its connection (sorted).
	warm []time.Duration
	errs int
}

func (l load) rate() float64 { return float64(l.reqs) / l.elapsed.Seconds() }

// add counts the run m into l (unsorted).
func (l *load) add(m load) {
	l.reqs += m.reqs
	l.elapsed += m.elapsed
	l.lat = append(l.lat, m.lat...)
	l.warm = append(l.warm, m.warm...)
	l.errs += m.errs
}

func (l load) pct(p float64) time.Duration { return pct(l.lat, p) }

// pct is the p-th quantile of sorted latencies (0 for none).
func pct(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	return lat[min(len(lat)-1, int(p*float64(len(lat))))]
}

func generate(target *url.URL, proxy *url.URL, clients, n int) load {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients, DisableCompression: true}
	if proxy != nil {
		tr.Proxy = http.ProxyURL(proxy)
	}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	var next atomic.Int64
	lats := make([][]time.Duration, clients)
	firsts := make([]int, clients) // how many of lats[w] come first: 1, or 0 after an error
	errs := make([]int, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				resp, err := c.Get(target.String())
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					errs[w]++
					continue
				}
				if len(lats[w]) == 0 && errs[w] == 0 {
					firsts[w] = 1
				}
				lats[w] = append(lats[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	l := load{elapsed: time.Since(start)}
	for w := range clients {
		l.lat = append(l.lat, lats[w]...)
		l.warm = append(l.warm, lats[w][firsts[w]:]...)
		l.errs += errs[w]
	}
	l.reqs = len(l.lat)
	slices.Sort(l.lat)
	slices.Sort(l.warm)
	return l
}

// BenchmarkGatewayVsDirect measures, side by side in one run, the same
// load sent to a loopback origin directly, through the gateway, through a
// bare net/http forward proxy (bareProxy) and through a TCP relay that
// parses nothing (tcpRelay): each b.Loop round runs the four in turn, and
// the figures are over all rounds. Reported: req/s of each, their ratios,
// p50 and p99 latency direct and through the gateway and what the gateway
// adds.
//
//	go test -run '^$' -bench GatewayVsDirect -benchtime 3x ./gateway
func BenchmarkGatewayVsDirect(b *testing.B) {
	for _, sc := range []struct {
		name    string
		clients int
		n       int
		size    int
		think   time.Duration
	}{
		{"1-client-sequential-1KiB", 1, 3000, 1 << 10, 0},
		{"32-clients-flat-out-1KiB", 32, 20000, 1 << 10, 0},
		{"32-clients-flat-out-64KiB", 32, 5000, 64 << 10, 0},
		{"32-clients-server-20ms-16KiB", 32, 5000, 16 << 10, 20 * time.Millisecond},
		{"1000-clients-server-500ms-4KiB", 1000, 8000, 4 << 10, 500 * time.Millisecond},
	} {
		b.Run(sc.name, func(b *testing.B) {
			origin := benchOrigin(b, sc.size, sc.think)
			g, err := New(Config{Limiter: unlimited(b), AllowPrivate: true, MaxIdleConnsPerHost: 1024})
			if err != nil {
				b.Fatal(err)
			}
			proxy := serve(b, g)
			bare := bareProxy(b, 1024)
			relayed := tcpRelay(b, origin)
			generate(origin, nil, sc.clients, sc.clients*2) // warm every path
			generate(origin, proxy, sc.clients, sc.clients*2)
			generate(origin, bare, sc.clients, sc.clients*2)
			generate(relayed, nil, sc.clients, sc.clients*2)
			var direct, gw, bp, relay load
			for b.Loop() {
				direct.add(generate(origin, nil, sc.clients, sc.n))
				gw.add(generate(origin, proxy, sc.clients, sc.n))
				bp.add(generate(origin, bare, sc.clients, sc.n))
				relay.add(generate(relayed, nil, sc.clients, sc.n))
			}
			for _, l := range []*load{&direct, &gw, &bp, &relay} {
				slices.Sort(l.lat)
				slices.Sort(l.warm)
			}
			if direct.errs+gw.errs+bp.errs+relay.errs > 0 {
				b.Errorf("errors: %d direct, %d through the gateway, %d through the bare proxy, %d through the relay", direct.errs, gw.errs, bp.errs, relay.errs)
			}
			b.ReportMetric(100*relay.rate()/direct.rate(), "tcp-relay-%-of-direct")
			b.ReportMetric(direct.rate(), "direct-req/s")
			b.ReportMetric(gw.rate(), "gateway-req/s")
			b.ReportMetric(bp.rate(), "bare-proxy-req/s")
			b.ReportMetric(100*gw.rate()/direct.rate(), "%-of-direct")
			b.ReportMetric(100*bp.rate()/direct.rate(), "bare-proxy-%-of-direct")
			b.ReportMetric(100*gw.rate()/bp.rate(), "%-of-bare-proxy")
			b.ReportMetric(ms(direct.pct(0.5)), "direct-p50-ms")
			b.ReportMetric(ms(gw.pct(0.5)), "gateway-p50-ms")
			b.ReportMetric(ms(direct.pct(0.99)), "direct-p99-ms")
			b.ReportMetric(ms(gw.pct(0.99)), "gateway-p99-ms")
			b.ReportMetric(ms(gw.pct(0.99)-direct.pct(0.99)), "added-p99-ms")
			b.ReportMetric(ms(pct(gw.warm, 0.99)-pct(direct.warm, 0.99)), "added-p99-warm-ms")
			b.ReportMetric(ms(pct(gw.warm, 0.5)-pct(direct.warm, 0.5)), "added-p50-warm-ms")
			b.ReportMetric(0, "ns/op") // a round is not an operation worth timing
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// openFDs counts this process's open file descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// settle polls until f() <= want or 10 s pass, and returns the last value.
func settle(want int, f func() int) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := f()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond) // polling for goroutines and sockets to wind down; bounded above
	}
}

// stable polls f until it gives the same value three times in a row, 50 ms
// apart (at most 3 s), and returns it.
func stable(f func() int) int {
	last, same := f(), 0
	for range 60 {
		time.Sleep(50 * time.Millisecond) // polling for background work to wind down; bounded above
		n := f()
		if n == last {
			if same++; same == 2 {
				break
			}
		} else {
			last, same = n, 0
		}
	}
	return last
}

// TestThousandConnections: 1,000 client connections at once, each with a
// request in flight at the same moment (the origin holds every answer until
// all 1,000 have arrived); every one is answered, and after the load, with
// the clients gone and idle connections closed, the gateway holds no more
// goroutines or file descriptors than before. Two rounds: no growth from
// one to the next either.
func TestThousandConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 connections")
	}
	const conns = 1000
	var arrived atomic.Int64
	var hold atomic.Bool // hold every answer until conns requests are in
	var all atomic.Pointer[chan struct{}]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hold.Load() {
			io.WriteString(w, "ok")
			return
		}
		ch := *all.Load()
		if arrived.Add(1) == conns {
			close(ch)
		}
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			http.Error(w, "not all requests arrived", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "ok")
	})}
	go srv.Serve(ln)
	defer srv.Close()
	origin := "http://" + ln.Addr().String() + "/"

	g, err := New(Config{Limiter: unlimited(t), AllowPrivate: true, MaxIdleConnsPerHost: conns})
	if err != nil {
		t.Fatal(err)
	}
	proxy := serve(t, g)
	flush := func() {
		g.exits.CloseIdleConnections()
		srv.SetKeepAlivesEnabled(false) // the origin drops idle keep-alives...
		srv.SetKeepAlivesEnabled(true)  // ...and keeps new ones
	}
	// Baseline after one request has warmed every pool.
	if resp, err := client(proxy, nil).Get(origin); err == nil {
		resp.Body.Close()
	}
	flush()
	baseG := stable(runtime.NumGoroutine)
	baseFD := stable(func() int { return openFDs(t) })

	var afterG, afterFD []int
	for round := range 2 {
		ch := make(chan struct{})
		all.Store(&ch)
		arrived.Store(0)
		hold.Store(true)
		var wg sync.WaitGroup
		var ok, bad atomic.Int64
		transports := make([]*http.Transport, conns)
		for i := range conns {
			transports[i] = &http.Transport{Proxy: http.ProxyURL(proxy), MaxConnsPerHost: 1}
			wg.Go(func() {
				c := &http.Client{Transport: transports[i], Timeout: 30 * time.Second}
				resp, err := c.Get(origin)
				if err != nil {
					bad.Add(1)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 && string(b) == "ok" {
					ok.Add(1)
				} else {
					bad.Add(1)
				}
			})
		}
		wg.Wait()
		hold.Store(false)
		if ok.Load() != conns {
			t.Fatalf("round %d: %d of %d concurrent requests answered ok (%d failed)", round, ok.Load(), conns, bad.Load())
		}
		for _, tr := range transports {
			tr.CloseIdleConnections()
		}
		flush()
		afterG = append(afterG, settle(baseG+5, runtime.NumGoroutine))
		afterFD = append(afterFD, settle(baseFD+5, func() int { return openFDs(t) }))
		t.Logf("round %d: %d concurrent requests on %d connections answered; goroutines %d (baseline %d), fds %d (baseline %d)",
			round, conns, conns, afterG[round], baseG, afterFD[round], baseFD)
	}
	for round := range 2 {
		if afterG[round] > baseG+5 || afterFD[round] > baseFD+5 {
			t.Errorf("round %d left %d goroutines (baseline %d) and %d fds (baseline %d)", round, afterG[round], baseG, afterFD[round], baseFD)
		}
	}
	if st := g.Stats(); st.Conns != 0 || st.InFlight != 0 {
		t.Errorf("after the load: %d client connections, %d in flight; want none", st.Conns, st.InFlight)
	}
}
