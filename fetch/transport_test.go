package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/pool"
	"github.com/exitgate/exitgate/verdict"
)

// clientsSite answers every request and records the client IPs and the
// number of requests.
type clientsSite struct {
	mu    sync.Mutex
	ips   map[string]int
	total int
}

func newClientsSite(t *testing.T, h http.Header) (*clientsSite, *httptest.Server) {
	s := &clientsSite{ips: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip, _, _ := net.SplitHostPort(r.RemoteAddr)
		s.mu.Lock()
		s.ips[ip]++
		s.total++
		s.mu.Unlock()
		for k, v := range h {
			w.Header()[k] = v
		}
		fmt.Fprintln(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *clientsSite) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

// TestTransportZeroValue: a zero Transport works (one direct exit under a
// default limiter) instead of panicking.
func TestTransportZeroValue(t *testing.T) {
	_, srv := newClientsSite(t, nil)
	c := &http.Client{Transport: &fetch.Transport{}, Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := get(t, c, srv.URL+"/x")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET through a zero Transport: %v, %v", resp, err)
	}
}

// TestTransportNoURL: a request without a URL is an error, as net/http
// gives, not a panic.
func TestTransportNoURL(t *testing.T) {
	if _, err := (&fetch.Transport{}).RoundTrip(&http.Request{Method: http.MethodGet}); err == nil {
		t.Errorf("RoundTrip of a request with no URL: nil error")
	}
}

// TestTransportRefusesUnsendable: a request net/http would not send (an
// ftp:// URL, a header name or value it cannot write) is refused before a
// lane is taken: nothing held, nothing learned, OnSent not told (it waited
// for a lane, was charged as a retryable failure and reported sent).
func TestTransportRefusesUnsendable(t *testing.T) {
	lim, err := limit.New(limit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	rt := &fetch.Transport{Limiter: lim, Exits: fetch.NewExitSet([]fetch.Member{{ID: "a", Transport: http.DefaultTransport}}, nil, lim.SetExits),
		OnSent: func(fetch.Sent) { sent++ }}
	for _, req := range []*http.Request{
		{Method: http.MethodGet, URL: &url.URL{Scheme: "ftp", Host: "x.example", Path: "/"}, Header: http.Header{}},
		{Method: http.MethodGet, URL: &url.URL{Scheme: "http", Host: "x.example", Path: "/"}, Header: http.Header{"Bad Name": {"v"}}},
		{Method: http.MethodGet, URL: &url.URL{Scheme: "http", Host: "x.example", Path: "/"}, Header: http.Header{"X-A": {"a\x01b"}}},
		{Method: http.MethodGet, URL: &url.URL{Scheme: "http", Host: "x.example", Path: "/"}},
		{Method: "BAD METHOD", URL: &url.URL{Scheme: "http", Host: "x.example", Path: "/"}, Header: http.Header{}},
	} {
		if _, err := rt.RoundTrip(req); err == nil {
			t.Errorf("RoundTrip(%v %v): no error", req.URL, req.Header)
		}
	}
	if snap := lim.Snapshot(time.Now()); sent != 0 || len(snap.Hosts) != 0 {
		t.Errorf("refused requests: OnSent told %d times, the limiter knows %d hosts; want none", sent, len(snap.Hosts))
	}
}

// TestTransportHalfConfigured: a Limiter without Exits (or the reverse) is
// a clear error, not a panic, and the request is not sent.
func TestTransportHalfConfigured(t *testing.T) {
	site, srv := newClientsSite(t, nil)
	lim, err := limit.New(limit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range []*fetch.Transport{
		{Limiter: lim},
		{Exits: fetch.ExitMap(map[string]http.RoundTripper{"a": http.DefaultTransport})},
	} {
		_, err := get(t, &http.Client{Transport: rt}, srv.URL)
		if !errors.Is(err, fetch.ErrTransportConfig) {
			t.Errorf("GET through %+v: %v, want ErrTransportConfig", rt, err)
		}
	}
	if n := site.requests(); n != 0 {
		t.Errorf("the site got %d requests", n)
	}
}

// TestTransportLeavesResponseAlone: the response's headers are the
// server's, nothing added (the exit used to be written into them); the exit
// is told through OnSent.
func TestTransportLeavesResponseAlone(t *testing.T) {
	_, srv := newClientsSite(t, http.Header{"X-Ratelimit-Remaining": {"7"}, "X-Server": {"a"}})
	direct, err := get(t, &http.Client{}, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := fetch.NewTransport(nil, fetch.TransportConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var sent []fetch.Sent
	rt.OnSent = func(s fetch.Sent) { sent = append(sent, s) }
	c := &http.Client{Transport: rt}
	defer c.CloseIdleConnections()
	resp, err := get(t, c, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	keys := func(h http.Header) []string {
		var ks []string
		for k := range h {
			if k != "Date" {
				ks = append(ks, k)
			}
		}
		slices.Sort(ks)
		return ks
	}
	if got, want := keys(resp.Header), keys(direct.Header); !slices.Equal(got, want) {
		t.Errorf("response header keys %v, want the server's %v", got, want)
	}
	if len(sent) != 1 || sent[0].Member != "direct" || sent[0].Status != 200 || sent[0].Verdict != verdict.OK {
		t.Errorf("OnSent got %+v, want one OK through direct", sent)
	}
}

// TestTransportCloseIdleConnections: http.Client.CloseIdleConnections
// reaches the exits' transports: the server sees its kept-alive connection
// closed.
func TestTransportCloseIdleConnections(t *testing.T) {
	closed := make(chan struct{}, 8)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	rt, err := fetch.NewTransport(nil, fetch.TransportConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: rt}
	if _, err := get(t, c, srv.URL); err != nil {
		t.Fatal(err)
	}
	c.CloseIdleConnections()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the idle connection was still open 5 s after CloseIdleConnections")
	}
}

// TestNewTransportOneList: the exits of one list are the limiter's exits
// and the transports' at once: requests leave from both bound addresses,
// and the limiter has lanes for both.
func TestNewTransportOneList(t *testing.T) {
	site, srv := newClientsSite(t, nil)
	exits, err := pool.Parse(strings.NewReader("bind:127.0.0.101-127.0.0.102\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := fetch.NewTransport(exits, fetch.TransportConfig{Limit: limit.Config{FirstGuess: limit.PerSecond(50)}})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: rt, Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	for i := range 6 {
		if _, err := get(t, c, fmt.Sprintf("%s/%d", srv.URL, i)); err != nil {
			t.Fatal(err)
		}
	}
	site.mu.Lock()
	ips := site.ips
	site.mu.Unlock()
	if ips["127.0.0.101"] == 0 || ips["127.0.0.102"] == 0 || len(ips) != 2 {
		t.Errorf("the site saw %v, want both bound addresses", ips)
	}
	snap := rt.Limiter.(*limit.Limiter).Snapshot(time.Now())
	var lanes []string
	for _, h := range snap.Hosts {
		for _, l := range h.Lanes {
			lanes = append(lanes, l.Exit)
		}
	}
	slices.Sort(lanes)
	if want := []string{"bind:127.0.0.101", "bind:127.0.0.102"}; !slices.Equal(lanes, want) {
		t.Errorf("limiter lanes on exits %v, want %v", lanes, want)
	}
}

// TestTransportFailsFastPastDeadline: when the next lane frees up after
// the request's deadline (a lane paced at 1 per minute, a client timeout of
// 3 s), RoundTrip returns a *WaitError at once, saying when the host may go,
// and sends nothing; the client's error unwraps to it.
func TestTransportFailsFastPastDeadline(t *testing.T) {
	site, srv := newClientsSite(t, nil)
	rt, err := fetch.NewTransport(nil, fetch.TransportConfig{Limit: limit.Config{FirstGuess: limit.PerMinute(1)}})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: rt, Timeout: 3 * time.Second}
	defer c.CloseIdleConnections()
	if _, err := get(t, c, srv.URL+"/1"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = get(t, c, srv.URL+"/2")
	elapsed := time.Since(start)
	var we *fetch.WaitError
	if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second GET: %v, want a *WaitError", err)
	}
	if elapsed > time.Second {
		t.Errorf("the second GET failed after %v, want at once", elapsed)
	}
	if wait := time.Until(we.Next); wait < 30*time.Second || wait > 61*time.Second {
		t.Errorf("WaitError.Next is %v away, want about a minute", wait)
	}
	if !strings.Contains(err.Error(), "the host may go at") {
		t.Errorf("WaitError says %q, want when the host may go", err)
	}
	if n := site.requests(); n != 1 {
		t.Errorf("the site got %d requests, want 1", n)
	}
}

// TestTransportGivesUpBeforeDeadline: a waiter that is not served before
// its deadline less Reserve gets a *WaitError while its request still has
// the reserve to run, rather than the client's own timeout: 20 requests at
// once on a lane paced at 10/s with a 1 s client timeout, Reserve 250 ms.
func TestTransportGivesUpBeforeDeadline(t *testing.T) {
	site, srv := newClientsSite(t, nil)
	rt, err := fetch.NewTransport(nil, fetch.TransportConfig{Limit: limit.Config{FirstGuess: limit.PerSecond(10), HostCeiling: limit.PerSecond(10)}})
	if err != nil {
		t.Fatal(err)
	}
	rt.Reserve = 250 * time.Millisecond
	c := &http.Client{Transport: rt, Timeout: time.Second}
	defer c.CloseIdleConnections()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok, waitErrs, other int
	for i := range 20 {
		wg.Go(func() {
			_, err := get(t, c, fmt.Sprintf("%s/%d", srv.URL, i))
			var we *fetch.WaitError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.As(err, &we):
				waitErrs++
			default:
				other++
				t.Errorf("GET: %v, want success or a *WaitError", err)
			}
		})
	}
	wg.Wait()
	if ok == 0 || waitErrs == 0 || ok+waitErrs != 20 || other != 0 {
		t.Errorf("%d ok, %d WaitError, %d other; want some of each of the first two and 20 in all", ok, waitErrs, other)
	}
	if n := site.requests(); n != ok {
		t.Errorf("the site got %d requests, want %d (a WaitError sends nothing)", n, ok)
	}
}

// TestTransportAllExitsDown: when every exit of the pool is failing as a
// proxy (two proxies on loopback ports nothing listens on), a request is
// refused at once with a *WaitError that says so and wraps ErrExitsDown,
// whatever its deadline: the client here has none, and the wait held it
// until a quarantine ended, the error saying only that no lane freed up.
func TestTransportAllExitsDown(t *testing.T) {
	_, srv := newClientsSite(t, nil)
	dead := []string{"http://" + peertest.DeadAddr(t), "http://" + peertest.DeadAddr(t)} // each connection refused
	exits, err := pool.Parse(strings.NewReader(strings.Join(dead, "\n")+"\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := fetch.NewTransport(exits, fetch.TransportConfig{Limit: limit.Config{FirstGuess: limit.PerSecond(50)}})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: rt}
	defer c.CloseIdleConnections()
	for i := range 2 { // one request through each exit: both refused
		if _, err := get(t, c, fmt.Sprintf("%s/%d", srv.URL, i)); err == nil {
			t.Fatalf("GET %d through a dead proxy succeeded", i)
		}
	}
	start := time.Now()
	_, err = get(t, c, srv.URL+"/3")
	var we *fetch.WaitError
	if !errors.As(err, &we) || !errors.Is(err, fetch.ErrExitsDown) || !we.AllExitsDown() || we.Exits != 2 {
		t.Fatalf("third GET: %v (%+v), want a *WaitError saying both exits are down", err, we)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("refused after %v, want at once", el)
	}
	if !strings.Contains(err.Error(), "all 2 exits are failing as proxies") {
		t.Errorf("error %q does not say the exits are down", err)
	}
}

// TestTransportConcurrencyCoversBodies: a request holds its host's
// concurrency until its body is read or closed, as the crawl engine counts
// it: given back at the headers, a HostConcurrency of 1 let six streaming
// bodies run at once.
func TestTransportConcurrencyCoversBodies(t *testing.T) {
	var mu sync.Mutex
	cur, peak := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cur++
		peak = max(peak, cur)
		mu.Unlock()
		defer func() { mu.Lock(); cur--; mu.Unlock() }()
		w.(http.Flusher).Flush() // the headers now, the body over 200 ms
		time.Sleep(200 * time.Millisecond)
		io.WriteString(w, "body")
	}))
	defer srv.Close()
	rt, err := fetch.NewTransport(nil, fetch.TransportConfig{Limit: limit.Config{FirstGuess: limit.PerSecond(100), HostConcurrency: 1}})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: rt, Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			resp, err := c.Get(srv.URL + "/s")
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	if peak != 1 {
		t.Errorf("%d requests at once with HostConcurrency 1, want 1", peak)
	}
}

// TestTransportAbandonsWhatLeft: a request the server received and whose
// answer the client's deadline cut off was sent: its token stays spent
// (abandoned), where one canceled as never sent gave its pace back and the
// next went at once (a 2/s host held each request 3 s behind a 1-s client
// timeout got 19 requests in 5 s). Four callers loop for 2 s on a host held
// to 2/s whose answers take longer than their timeout: the server sees no
// more than the pace allows.
func TestTransportAbandonsWhatLeft(t *testing.T) {
	srv, got := peertest.SlowOrigin(t, 2*time.Second)
	rt, err := fetch.NewTransport(nil, fetch.TransportConfig{Limit: limit.Config{FirstGuess: limit.PerSecond(2), HostCeiling: limit.PerSecond(2)}})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: rt, Timeout: 400 * time.Millisecond}
	defer c.CloseIdleConnections()
	if a := peertest.Impatient(c, srv.URL+"/slow", 4, 2*time.Second); a != 0 {
		t.Errorf("%d GETs answered, want each cut by the client's timeout", a)
	}
	n := got()
	if n > 6 {
		t.Errorf("the server got %d requests in 2 s at 2/s, want at most 6: abandoned requests were given back as never sent", n)
	}
	var abandoned uint64
	for _, h := range rt.Limiter.(*limit.Limiter).Snapshot(time.Now()).Hosts {
		abandoned += h.Counters.Abandoned
	}
	if abandoned == 0 || int64(abandoned) > n {
		t.Errorf("%d abandoned in the limiter's counters, want between 1 and the %d the server got", abandoned, n)
	}
}

// TestTransportWaitErrorSaysHostFull: a wait given up while every request
// the host allows at once is in flight (a body held open) says so: it said
// "the host may go in 0s", the limiter's recheck, again and again.
func TestTransportWaitErrorSaysHostFull(t *testing.T) {
	_, srv := newClientsSite(t, nil)
	rt, err := fetch.NewTransport(nil, fetch.TransportConfig{Limit: limit.Config{FirstGuess: limit.PerSecond(100), HostConcurrency: 1}})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: rt, Timeout: 400 * time.Millisecond}
	defer c.CloseIdleConnections()
	held, err := c.Get(srv.URL + "/held") // its body left open
	if err != nil {
		t.Fatal(err)
	}
	defer held.Body.Close()
	_, err = c.Get(srv.URL + "/next")
	var we *fetch.WaitError
	if !errors.As(err, &we) || we.Full != 1 || !strings.Contains(err.Error(), "all 1 of the host's requests allowed at once are in flight") {
		t.Errorf("GET with the host's one request in flight: %v (Full %v), want a WaitError saying the host is full", err, we)
	}
}
