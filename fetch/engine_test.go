package fetch

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exitgate/exitgate/frontier"
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
	fr, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "f.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	paths := []string{"/ok/1", "/ok/2", "/ok/3", "/gone", "/flaky", "/limited", "/park", "/redir", "/loop", "/private/x"}
	var jobs []frontier.NewJob
	for _, p := range paths {
		jobs = append(jobs, frontier.NewJob{URL: srv.URL + p})
	}
	if _, err := fr.Push(ctx, jobs); err != nil {
		t.Fatal(err)
	}

	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(50)})
	if err != nil {
		t.Fatal(err)
	}
	lim.SetExits([]limit.Exit{{ID: "e1"}, {ID: "e2"}})
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
		"/gone":      {frontier.Abandoned, "status 404"},
		"/flaky":     {frontier.Done, ""},
		"/limited":   {frontier.Done, ""},
		"/park":      {frontier.Parked, "Retry-After 1h0m0s over max wait"},
		"/redir":     {frontier.Done, ""},
		"/loop":      {frontier.Abandoned, "too many redirects"},
		"/private/x": {frontier.Abandoned, "disallowed by robots.txt"},
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
	if len(finished) != 9 {
		t.Errorf("OnFinish called for %d jobs, want 9 (all but the parked one)", len(finished))
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
