package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/exitgate/exitgate/backoff"
	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/metrics"
)

// TestEngineBodyNotStoredIsNotDone: when a body cannot be stored the job is
// not done. The real file system refuses here: the body directory is
// replaced by a plain file after the engine checked it, so every create
// fails with ENOTDIR, as a full disk or a lack of inodes would fail it (the
// crawl test TestCrawlOutOfInodes does that on a tiny tmpfs). Run stops with
// an error naming the cause, every job stays queued and uncharged, and a run
// with a usable directory fetches them all, each with its body. The error of
// the create used to be ignored: the jobs were recorded done, with no body,
// and a resume never fetched them again.
func TestEngineBodyNotStoredIsNotDone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "page "+r.URL.Path)
	}))
	defer srv.Close()
	ctx := context.Background()
	dir := t.TempDir()
	const n = 20
	var jobs []frontier.NewJob
	for i := range n {
		jobs = append(jobs, frontier.NewJob{URL: fmt.Sprintf("%s/p/%d", srv.URL, i)})
	}
	fr := sqliteFrontier(t, dir, jobs...)
	bodies := filepath.Join(dir, "bodies")
	// run runs an engine over fr; prepared is called once NewEngine has
	// made the body directory.
	run := func(prepared func()) error {
		t.Helper()
		lim := limiterWith(t, limit.Config{FirstGuess: limit.PerSecond(1000), LaneBurst: 10}, "e1")
		core := NewCore(CoreConfig{Concurrency: 4}, fr, lim, metrics.NewTally(time.Now()))
		eng, err := NewEngine(EngineConfig{Exits: ExitMap(map[string]http.RoundTripper{"e1": http.DefaultTransport}), BodyDir: bodies}, core)
		if err != nil {
			t.Fatal(err)
		}
		prepared()
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return eng.Run(rctx)
	}

	err := run(func() {
		if err := os.RemoveAll(bodies); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bodies, []byte("a file where the body directory should be\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	var se *StoreError
	if !errors.As(err, &se) || !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("Run with no body directory = %v, want a StoreError wrapping ENOTDIR", err)
	}
	c, err := fr.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Done != 0 || c.Queued != n {
		t.Errorf("after failed body writes: %+v, want all %d queued and none done", c, n)
	}
	for id := int64(1); id <= n; id++ {
		if j, _ := fr.Get(ctx, id); j.Attempts != 0 {
			t.Errorf("job %d charged %d attempts for this machine's failure", id, j.Attempts)
		}
	}

	// Room again: everything is fetched, each with its body.
	if err := os.Remove(bodies); err != nil {
		t.Fatal(err)
	}
	if err := run(func() {}); err != nil {
		t.Fatalf("Run with room: %v", err)
	}
	for id := int64(1); id <= n; id++ {
		j, err := fr.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != frontier.Done {
			t.Errorf("job %d: %v, want done", id, j.State)
			continue
		}
		if b, err := os.ReadFile(j.Result.Body); err != nil || string(b) != fmt.Sprintf("page /p/%d", id-1) {
			t.Errorf("job %d body %q = %q, %v; want its page", id, j.Result.Body, b, err)
		}
	}
}

// TestEngineFinal3xxKeepsBody: a 3xx that is not followed (300 Multiple
// Choices, 304, 305) is a final answer, done, and done only with its body
// stored, as a 2xx is; a redirect that is followed stores nothing of its
// own. The engine stored 2xx bodies only, and such URLs were recorded done
// with no body file.
func TestEngineFinal3xxKeepsBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/choices":
			w.Header().Set("Location", "/a")
			w.WriteHeader(http.StatusMultipleChoices)
			fmt.Fprint(w, "choose /a or /b")
		case "/not-modified":
			w.WriteHeader(http.StatusNotModified)
		case "/use-proxy":
			w.WriteHeader(http.StatusUseProxy)
			fmt.Fprint(w, "use a proxy")
		case "/moved":
			http.Redirect(w, r, "/a", http.StatusMovedPermanently)
		default:
			fmt.Fprint(w, "page "+r.URL.Path)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	want := map[string]string{"/choices": "choose /a or /b", "/not-modified": "", "/use-proxy": "use a proxy", "/moved": "page /a"}
	var jobs []frontier.NewJob
	for _, p := range []string{"/choices", "/not-modified", "/use-proxy", "/moved"} {
		j := frontier.NewJob{URL: srv.URL + p}
		if p == "/not-modified" {
			// A 304 answers a conditional request (unasked, it is
			// abandoned: TestCrawlUnconditional304).
			j.Header = http.Header{"If-None-Match": {`"v1"`}}
		}
		jobs = append(jobs, j)
	}
	fr := sqliteFrontier(t, dir, jobs...)
	lim := limiterWith(t, limit.Config{FirstGuess: limit.PerSecond(1000), LaneBurst: 10}, "e1")
	core := NewCore(CoreConfig{Concurrency: 2}, fr, lim, metrics.NewTally(time.Now()))
	eng, err := NewEngine(EngineConfig{Exits: ExitMap(map[string]http.RoundTripper{"e1": http.DefaultTransport}), BodyDir: filepath.Join(dir, "bodies")}, core)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := eng.Run(ctx); err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= int64(len(jobs)); id++ {
		j, err := fr.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		path := j.URL[len(srv.URL):]
		if j.State != frontier.Done || j.Result.Body == "" {
			t.Errorf("%s: %v (status %d), body %q; want done with its body stored", path, j.State, j.Status, j.Result.Body)
			continue
		}
		if b, err := os.ReadFile(j.Result.Body); err != nil || string(b) != want[path] {
			t.Errorf("%s (status %d): body %q, %v; want %q", path, j.Status, b, err, want[path])
		}
	}
}

// TestEngineBodiesWholeOnly: BodyDir/<id> is only ever a whole body. A body
// cut short leaves nothing (it was written in place and removed after); a
// body an earlier run stored for a job that now ends otherwise (its run
// killed before the job was recorded done) is removed; what a killed run
// left half written under .partial is cleared when the engine is made;
// with SyncBodies the body is stored as without.
func TestEngineBodiesWholeOnly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gone":
			http.NotFound(w, r)
		case "/cut":
			w.Header().Set("Content-Length", "1000")
			fmt.Fprint(w, "only ten b")
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
		default:
			fmt.Fprint(w, "page "+r.URL.Path)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	fr := sqliteFrontier(t, dir, frontier.NewJob{URL: srv.URL + "/gone"}, frontier.NewJob{URL: srv.URL + "/cut"}, frontier.NewJob{URL: srv.URL + "/ok"})
	bodies := filepath.Join(dir, "bodies")
	if err := os.MkdirAll(filepath.Join(bodies, partialDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for path, content := range map[string]string{"1": "an earlier run's page of /gone", partialDir + "/2": "half a page"} {
		if err := os.WriteFile(filepath.Join(bodies, path), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lim := limiterWith(t, limit.Config{FirstGuess: limit.PerSecond(1000), LaneBurst: 10}, "e1")
	core := NewCore(CoreConfig{Concurrency: 2, Robots: true, Retry: RetryPolicy{MaxRetries: 1, Backoff: backoff.Policy{Base: time.Millisecond, Cap: time.Millisecond}}},
		fr, lim, metrics.NewTally(time.Now()))
	eng, err := NewEngine(EngineConfig{Exits: ExitMap(map[string]http.RoundTripper{"e1": http.DefaultTransport}), BodyDir: bodies, SyncBodies: true}, core)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bodies, partialDir, "2")); !os.IsNotExist(err) {
		t.Errorf("a killed run's partial body is still there once the engine is made: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := eng.Run(ctx); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]string{1: "", 2: "", 3: "page /ok"} {
		j, err := fr.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(bodies, fmt.Sprint(id)))
		switch {
		case want == "" && !os.IsNotExist(err):
			t.Errorf("job %d (%s, %v): bodies/%d holds %q, want no file", id, j.URL, j.State, id, b)
		case want != "" && (err != nil || string(b) != want || j.State != frontier.Done):
			t.Errorf("job %d (%s, %v): bodies/%d = %q, %v; want done with %q", id, j.URL, j.State, id, b, err, want)
		}
	}
	if left, _ := os.ReadDir(filepath.Join(bodies, partialDir)); len(left) != 0 {
		t.Errorf("%d files left under .partial after the run", len(left))
	}
	if _, err := os.Stat(filepath.Join(bodies, "0")); err == nil {
		t.Errorf("the host's robots.txt was kept as bodies/0, no job's body")
	}
}
