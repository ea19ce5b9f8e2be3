package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/exitgate/exitgate/backoff"
	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/memory"
	"github.com/exitgate/exitgate/frontier/sqlite"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/metrics"
)

// site answers by path, and records what it was asked.
type site struct {
	mu   sync.Mutex
	seen map[string]int
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen[r.URL.Path]++
	n := s.seen[r.URL.Path]
	s.mu.Unlock()
	switch p := r.URL.Path; {
	case p == "/robots.txt":
		fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
	case strings.HasPrefix(p, "/ok/"):
		fmt.Fprint(w, "fine "+p)
	case p == "/gone":
		http.Error(w, "gone", http.StatusNotFound)
	case p == "/auth407":
		// The server's own 407, no proxy between: the URL's fate.
		http.Error(w, "proxy credentials, from a server", http.StatusProxyAuthRequired)
	case p == "/flaky" && n == 1:
		http.Error(w, "bad gateway", http.StatusBadGateway)
	case p == "/limited" && n == 1:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "slow down", http.StatusTooManyRequests)
	case p == "/park":
		w.Header().Set("Retry-After", "3600")
		http.Error(w, "come back in an hour", http.StatusTooManyRequests)
	case p == "/redir":
		http.Redirect(w, r, "/ok/target", http.StatusFound)
	case p == "/loop":
		http.Redirect(w, r, "/loop", http.StatusFound)
	case p == "/to-private":
		http.Redirect(w, r, "/private/y", http.StatusFound)
	default:
		fmt.Fprint(w, "default")
	}
}

func (s *site) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[path]
}

func TestEngineFates(t *testing.T) {
	st := &site{seen: map[string]int{}}
	srv := httptest.NewServer(st)
	defer srv.Close()

	ctx := context.Background()
	dir := t.TempDir()
	paths := []string{"/ok/1", "/ok/2", "/ok/3", "/gone", "/flaky", "/limited", "/park", "/redir", "/loop", "/private/x", "/auth407", "/to-private"}
	var jobs []frontier.NewJob
	for _, p := range paths {
		jobs = append(jobs, frontier.NewJob{URL: srv.URL + p})
	}
	fr := sqliteFrontier(t, dir, jobs...)
	lim := limiterWith(t, limit.Config{FirstGuess: limit.PerSecond(50)}, "e1", "e2")
	tally := metrics.NewTally(time.Now())
	var finished []Finished
	var fmu sync.Mutex
	core := NewCore(CoreConfig{
		Concurrency: 4, Robots: true, MaxRedirects: 3,
		Retry:    RetryPolicy{MaxWait: time.Minute, Backoff: backoffFast},
		OnFinish: func(f Finished) { fmu.Lock(); finished = append(finished, f); fmu.Unlock() },
	}, fr, lim, tally)
	rt := http.DefaultTransport.(*http.Transport).Clone()
	eng, err := NewEngine(EngineConfig{
		Exits: ExitMap(map[string]http.RoundTripper{"e1": rt, "e2": rt}), BodyDir: filepath.Join(dir, "bodies"),
	}, core)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := eng.Run(runCtx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if runCtx.Err() != nil {
		t.Fatal("Run did not finish within 30s")
	}

	want := map[string]struct {
		state  frontier.State
		reason string
	}{
		"/ok/1": {frontier.Done, ""}, "/ok/2": {frontier.Done, ""}, "/ok/3": {frontier.Done, ""},
		"/gone":       {frontier.Abandoned, "status 404"},
		"/flaky":      {frontier.Done, ""},
		"/limited":    {frontier.Done, ""},
		"/park":       {frontier.Parked, "Retry-After 1h0m0s over max wait"},
		"/redir":      {frontier.Done, ""},
		"/loop":       {frontier.Abandoned, "too many redirects"},
		"/private/x":  {frontier.Abandoned, "disallowed by robots.txt"},
		"/auth407":    {frontier.Abandoned, "status 407"},
		"/to-private": {frontier.Abandoned, "disallowed by robots.txt"},
	}
	for id := int64(1); id <= int64(len(paths)); id++ {
		j, err := fr.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		p := strings.TrimPrefix(j.URL, srv.URL)
		w := want[p]
		if j.State != w.state || !strings.Contains(j.Reason, w.reason) {
			t.Errorf("%s: state %v reason %q, want %v with reason containing %q", p, j.State, j.Reason, w.state, w.reason)
		}
	}
	for _, f := range finished {
		// A redirect into a disallowed path names that path as the final
		// URL (its row named none).
		if strings.HasSuffix(f.Job.URL, "/to-private") && f.URL != srv.URL+"/private/y" {
			t.Errorf("/to-private finished with final URL %q, want the disallowed %s", f.URL, srv.URL+"/private/y")
		}
	}
	if n := st.count("/private/x"); n != 0 {
		t.Errorf("the server was asked for a disallowed path %d times", n)
	}
	if n := st.count("/robots.txt"); n != 1 {
		t.Errorf("robots.txt fetched %d times, want once", n)
	}
	if n := st.count("/ok/target"); n != 1 {
		t.Errorf("redirect target fetched %d times, want 1", n)
	}
	if n := st.count("/loop"); n != 4 {
		t.Errorf("/loop fetched %d times, want 4 (the URL and 3 hops)", n)
	}
	j, _ := fr.Get(ctx, 1)
	if j.Result.Body == "" || j.Result.Exit == "" {
		t.Errorf("done job lacks body path or exit: %+v", j.Result)
	}
	fmu.Lock()
	if len(finished) != len(paths)-1 {
		t.Errorf("OnFinish called for %d jobs, want %d (all but the parked one)", len(finished), len(paths)-1)
	}
	fmu.Unlock()
	s := tally.Snapshot(time.Now())
	if s.Total.ByStatus[429] != 2 || s.Total.ByStatus[502] != 1 {
		t.Errorf("tally statuses = %v, want two 429s and one 502", s.Total.ByStatus)
	}
}

func TestEngineStopHandsBackWork(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 20)
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	defer once.Do(func() { close(release) })

	ctx := context.Background()
	fr, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "f.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	var jobs []frontier.NewJob
	for i := range 20 {
		jobs = append(jobs, frontier.NewJob{URL: fmt.Sprintf("%s/%d", srv.URL, i)})
	}
	fr.Push(ctx, jobs)
	lim, _ := limit.New(limit.Config{FirstGuess: limit.PerSecond(1000), LaneBurst: 10})
	lim.SetExits([]limit.Exit{{ID: "e1"}})
	core := NewCore(CoreConfig{Concurrency: 2}, fr, lim, metrics.NewTally(time.Now()))
	eng, _ := NewEngine(EngineConfig{Exits: ExitMap(map[string]http.RoundTripper{"e1": http.DefaultTransport})}, core)

	// Abort while two requests hang: their jobs go back uncharged.
	runCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- eng.Run(runCtx) }()
	<-arrived
	<-arrived
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Run after abort: %v", err)
	}
	once.Do(func() { close(release) })
	c, err := fr.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Queued != 20 || c.Leased != 0 || c.Done != 0 {
		t.Errorf("after abort: %+v, want all 20 queued again", c)
	}
	for id := int64(1); id <= 20; id++ {
		if j, _ := fr.Get(ctx, id); j.Attempts != 0 {
			t.Errorf("job %d charged %d attempts by an abort", id, j.Attempts)
		}
	}
}

// TestEngineJobHeadersAndOnFinish: a job's own headers and metadata go with
// it (its headers on each of its requests, over the engine's; credentials
// not past a redirect to another host), and OnFinish hands back the job
// with its metadata, the final URL after redirects, the response headers,
// and the body, both kept in memory and stored.
func TestEngineJobHeadersAndOnFinish(t *testing.T) {
	var mu sync.Mutex
	got := map[string]http.Header{} // path -> request headers
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got["other"+r.URL.Path] = r.Header.Clone()
		mu.Unlock()
		fmt.Fprint(w, "elsewhere")
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.URL.Path] = r.Header.Clone()
		mu.Unlock()
		switch r.URL.Path {
		case "/start":
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/away":
			// The other server by another name: another host.
			http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/there", http.StatusFound)
		default:
			w.Header().Set("X-Served", r.URL.Path)
			fmt.Fprint(w, "page "+r.URL.Path)
		}
	}))
	defer srv.Close()

	ctx := context.Background()
	dir := t.TempDir()
	hdr := http.Header{"X-Token": {"t1"}, "Cookie": {"session=7"}, "User-Agent": {"job-agent"}}
	fr := sqliteFrontier(t, dir,
		frontier.NewJob{URL: srv.URL + "/start", Header: hdr, Meta: map[string]string{"depth": "2"}},
		frontier.NewJob{URL: srv.URL + "/away", Header: hdr},
		frontier.NewJob{URL: srv.URL + "/plain"},
	)
	lim := limiterWith(t, limit.Config{FirstGuess: limit.PerSecond(1000)}, "direct")
	var fins []Finished
	core := NewCore(CoreConfig{AllowPrivateRedirects: true, OnFinish: func(f Finished) {
		mu.Lock()
		fins = append(fins, f)
		mu.Unlock()
	}}, fr, lim, nil)
	eng, err := NewEngine(EngineConfig{
		Exits: ExitMap(map[string]http.RoundTripper{"direct": http.DefaultTransport.(*http.Transport).Clone()}), BodyDir: filepath.Join(dir, "bodies"), KeepBody: true,
		Header: http.Header{"X-Engine": {"e"}},
	}, core)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Run(ctx); err != nil {
		t.Fatal(err)
	}

	for _, path := range []string{"/start", "/final"} {
		h := got[path]
		if h.Get("X-Token") != "t1" || h.Get("Cookie") != "session=7" || h.Get("User-Agent") != "job-agent" || h.Get("X-Engine") != "e" {
			t.Errorf("request for %s had headers %v, want the job's (X-Token, Cookie, its User-Agent) and the engine's X-Engine", path, h)
		}
	}
	if h := got["other/there"]; h.Get("X-Token") != "t1" || h.Get("Cookie") != "" {
		t.Errorf("request redirected to another host had headers %v, want X-Token kept and Cookie dropped", h)
	}
	if h := got["/plain"]; h.Get("X-Token") != "" || h.Get("User-Agent") != DefaultUserAgent || h.Get("X-Engine") != "e" {
		t.Errorf("request for /plain had headers %v, want the engine's only", h)
	}

	byPath := map[string]Finished{}
	for _, f := range fins {
		byPath[strings.TrimPrefix(f.Job.URL, srv.URL)] = f
	}
	f, ok := byPath["/start"]
	if !ok || f.Outcome != "done" {
		t.Fatalf("OnFinish for /start = %+v, %v; want done", f, ok)
	}
	if f.URL != srv.URL+"/final" || f.Header.Get("X-Served") != "/final" || string(f.Body) != "page /final" {
		t.Errorf("OnFinish for /start: URL %q, X-Served %q, body %q; want the final URL, its headers and its body", f.URL, f.Header.Get("X-Served"), f.Body)
	}
	if f.Job.Meta["depth"] != "2" || f.Job.Header.Get("X-Token") != "t1" {
		t.Errorf("OnFinish for /start: job meta %v header %v, want them as pushed", f.Job.Meta, f.Job.Header)
	}
	if b, err := os.ReadFile(f.Result.Body); err != nil || string(b) != "page /final" {
		t.Errorf("stored body %q = %q, %v; want the page", f.Result.Body, b, err)
	}
	if f := byPath["/plain"]; f.Job.Meta != nil || string(f.Body) != "page /plain" {
		t.Errorf("OnFinish for /plain: meta %v body %q", f.Job.Meta, f.Body)
	}
}

// TestEngineTimeout: a request that gets no answer within Timeout fails as
// a timeout (retried, then abandoned as one), and the worker that waited goes on
// with other URLs.
func TestEngineTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	defer close(release)

	ctx := context.Background()
	jobs := []frontier.NewJob{{URL: srv.URL + "/hang"}}
	for i := range 20 {
		jobs = append(jobs, frontier.NewJob{URL: fmt.Sprintf("%s/ok/%d", srv.URL, i)})
	}
	fr := sqliteFrontier(t, t.TempDir(), jobs...)
	lim := limiterWith(t, limit.Config{FirstGuess: limit.PerSecond(1000)}, "direct")
	var reason string
	core := NewCore(CoreConfig{Concurrency: 1, Retry: RetryPolicy{MaxRetries: 1, Backoff: backoff.Policy{Base: time.Millisecond, Cap: time.Millisecond}},
		OnFinish: func(f Finished) {
			if strings.HasSuffix(f.Job.URL, "/hang") {
				reason = f.Outcome + ": " + f.Reason
			}
		}}, fr, lim, nil)
	eng, err := NewEngine(EngineConfig{Exits: ExitMap(map[string]http.RoundTripper{"direct": http.DefaultTransport.(*http.Transport).Clone()}), Timeout: 100 * time.Millisecond}, core)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Run(ctx); err != nil {
		t.Fatal(err)
	}
	c, _ := fr.Counts(ctx)
	if c.Done != 20 || c.Abandoned != 1 || !strings.Contains(reason, "timeout") {
		t.Errorf("after the run: %d done, %d abandoned, /hang %q; want 20 done, /hang abandoned for a timeout", c.Done, c.Abandoned, reason)
	}
}

// TestEngineAsksAgainWhenPaceRises: a host waiting out an interval at the
// slow start pace (0.485/s on the defaults: 2.06 s) is asked again when a
// success doubles the pace, and its next request goes an interval at the
// new pace after the last, not the old one. Sleeping out the old interval
// cost the ramp one per doubling: four seconds to reach 10/s.
func TestEngineAsksAgainWhenPaceRises(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()

	ctx := context.Background()
	var jobs []frontier.NewJob
	for i := range 3 {
		jobs = append(jobs, frontier.NewJob{URL: fmt.Sprintf("%s/%d", srv.URL, i)})
	}
	fr := sqliteFrontier(t, t.TempDir(), jobs...)
	lim := limiterWith(t, limit.Config{}, "e1")
	core := NewCore(CoreConfig{Concurrency: 4}, fr, lim, metrics.NewTally(time.Now()))
	eng, err := NewEngine(EngineConfig{Exits: ExitMap(map[string]http.RoundTripper{"e1": http.DefaultTransport})}, core)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := eng.Run(runCtx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 3 {
		t.Fatalf("%d requests reached the server, want 3", len(at))
	}
	// Two successes an interval apart double the pace to 0.97/s: the
	// third request goes about 1.03 s after the second (2.06 s before).
	if gap := at[2].Sub(at[1]); gap > 1500*time.Millisecond || gap < 900*time.Millisecond {
		t.Errorf("third request %v after the second, want about 1.03 s (an interval at the doubled pace)", gap)
	}
}

// TestCoreBuffer: Buffer bounds the jobs the Core keeps claimed (a worker
// of a distributed crawl by the exits it owns: what it holds no other
// worker may take), never above the default.
func TestCoreBuffer(t *testing.T) {
	for _, c := range []struct {
		buffer func() int
		want   int
	}{
		{nil, 64},                        // the default, max(64, 4×Concurrency)
		{func() int { return 16 }, 16},   // one exit's
		{func() int { return 1000 }, 64}, // never above the default
		{func() int { return 0 }, 1},     // at least one
	} {
		urls := make([]string, 200)
		for i := range urls {
			urls[i] = fmt.Sprintf("http://a.test/p/%d", i)
		}
		fr := pushed(t, urls)
		lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(1)})
		if err != nil {
			t.Fatal(err)
		}
		lim.SetExits([]limit.Exit{{ID: "e1"}})
		core := NewCore(CoreConfig{Concurrency: 4, Buffer: c.buffer}, fr, lim, nil)
		if _, _, err := core.Dispatch(context.Background(), time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
		counts, err := fr.Counts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if counts.Leased != c.want {
			t.Errorf("Buffer %v: %d jobs claimed, want %d", c.buffer != nil, counts.Leased, c.want)
		}
	}
}

// TestParkedForAWaveSaysWhy: a host whose lanes a wave of forbidden
// answers quarantined parks its URLs with that reason, not "the limiter
// holds it".
func TestParkedForAWaveSaysWhy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer srv.Close()
	var jobs []frontier.NewJob
	for i := range 20 {
		jobs = append(jobs, frontier.NewJob{URL: fmt.Sprintf("%s/f/%d", srv.URL, i)})
	}
	fr := sqliteFrontier(t, t.TempDir(), jobs...)
	lim := limiterWith(t, limit.Config{FirstGuess: limit.PerSecond(50)}, "e1", "e2")
	core := NewCore(CoreConfig{Concurrency: 2, Retry: RetryPolicy{MaxWait: time.Second, Backoff: backoffFast}}, fr, lim, nil)
	rt := http.DefaultTransport.(*http.Transport).Clone()
	eng, err := NewEngine(EngineConfig{Exits: ExitMap(map[string]http.RoundTripper{"e1": rt, "e2": rt})}, core)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := eng.Run(ctx); err != nil {
		t.Fatal(err)
	}
	parked := 0
	for id := int64(1); id <= 20; id++ {
		j, err := fr.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == frontier.Parked {
			parked++
			if !strings.Contains(j.Reason, "forbidden") {
				t.Errorf("%s parked: %q, want the reason to say forbidden answers quarantined the lanes", j.URL, j.Reason)
			}
		}
	}
	if parked == 0 {
		t.Fatalf("no URL parked: the wave banned no lane")
	}
}

// TestCoreCompleteTwice: an attempt completed twice, or one never
// dispatched, is refused (ErrNotInFlight) and counts nothing: the count in
// flight went below zero, and the next dispatch past Concurrency.
func TestCoreCompleteTwice(t *testing.T) {
	fr := sqliteFrontier(t, t.TempDir(), frontier.NewJob{URL: "http://a.example/1"}, frontier.NewJob{URL: "http://a.example/2"})
	lim := limiterWith(t, limit.Config{FirstGuess: limit.PerSecond(50)}, "e1")
	core := NewCore(CoreConfig{Concurrency: 2}, fr, lim, nil)
	ctx := context.Background()
	as, _, err := core.Dispatch(ctx, time.Now())
	if err != nil || len(as) == 0 {
		t.Fatalf("Dispatch = %d attempts, %v", len(as), err)
	}
	ok := Response{Status: 200, At: time.Now()}
	if err := core.Complete(ctx, as[0], ok); err != nil {
		t.Fatal(err)
	}
	for _, a := range []Attempt{as[0], {}} {
		if err := core.Complete(ctx, a, ok); !errors.Is(err, ErrNotInFlight) {
			t.Errorf("Complete(%v) again = %v, want ErrNotInFlight", a.URL, err)
		}
	}
	if n := core.Inflight(); n != len(as)-1 {
		t.Errorf("%d in flight, want %d", n, len(as)-1)
	}
}

// TestNewEngineRefusesBadConfig: a negative setting, or a Core without a
// frontier or limiter, is an error from NewEngine: the first were taken as
// the defaults unsaid, the second panicked in Run.
func TestNewEngineRefusesBadConfig(t *testing.T) {
	fr := sqliteFrontier(t, t.TempDir())
	lim := limiterWith(t, limit.Config{}, "e1")
	exits := ExitMap(map[string]http.RoundTripper{"e1": http.DefaultTransport})
	for _, tc := range []struct {
		cfg  EngineConfig
		core *Core
	}{
		{EngineConfig{Exits: exits, Timeout: -time.Second}, NewCore(CoreConfig{}, fr, lim, nil)},
		{EngineConfig{Exits: exits, MaxBodyBytes: -1}, NewCore(CoreConfig{}, fr, lim, nil)},
		{EngineConfig{Exits: exits}, NewCore(CoreConfig{}, nil, lim, nil)},
		{EngineConfig{Exits: exits}, nil},
	} {
		if _, err := NewEngine(tc.cfg, tc.core); err == nil {
			t.Errorf("NewEngine(%+v) = nil error, want one", tc.cfg)
		}
	}
}

// TestEngineStopWaitsIdle: after Stop, the run waits for its requests in
// flight without spinning: selecting on the closed stop channel woke the
// loop at once, every time, a core at 100% until the last request ended
// (up to the request timeout).
func TestEngineStopWaitsIdle(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	defer srv.Close()
	var once sync.Once
	defer once.Do(func() { close(release) })
	ctx := context.Background()
	fr, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	fr.Push(ctx, []frontier.NewJob{{URL: srv.URL + "/a"}, {URL: srv.URL + "/b"}})
	lim, _ := limit.New(limit.Config{FirstGuess: limit.PerSecond(1000), LaneBurst: 10})
	lim.SetExits([]limit.Exit{{ID: "e1"}})
	core := NewCore(CoreConfig{Concurrency: 2}, fr, lim, nil)
	eng, _ := NewEngine(EngineConfig{Exits: ExitMap(map[string]http.RoundTripper{"e1": http.DefaultTransport})}, core)
	errc := make(chan error, 1)
	go func() { errc <- eng.Run(ctx) }()
	<-arrived
	<-arrived
	eng.Stop()
	before := cpuTime(t)
	time.Sleep(time.Second)
	used := cpuTime(t) - before
	once.Do(func() { close(release) })
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if used > 300*time.Millisecond {
		t.Errorf("the process used %v of CPU in the second after Stop with two requests hanging, want next to none", used)
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
