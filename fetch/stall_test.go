package fetch

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/backoff"
	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/internal/syncbuf"
	"github.com/exitgate/exitgate/limit"
)

// TestEngineTimeoutSaid: two hosts stall, one that accepts and never
// answers, one that sends its headers and a byte and then nothing. Each
// URL is tried twice, times out each time, and is abandoned as a timeout,
// while the third host's URLs are done; the log says once per host, at the
// first timeout, that it does not answer in time and how it stalled. Such a
// host's URLs were worked on for --timeout an attempt, retries and all,
// with nothing said at the default log level.
func TestEngineTimeoutSaid(t *testing.T) {
	stall := func(trickle bool) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if trickle {
				w.Header().Set("Content-Length", "1000")
				w.Write([]byte("x"))
				w.(http.Flusher).Flush()
			}
			<-r.Context().Done()
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	hang, trickle := stall(false), stall(true)
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer ok.Close()

	ctx := context.Background()
	jobs := []frontier.NewJob{{URL: hang.URL + "/a"}, {URL: hang.URL + "/b"}, {URL: trickle.URL + "/a"}}
	for _, p := range []string{"/1", "/2", "/3"} {
		jobs = append(jobs, frontier.NewJob{URL: ok.URL + p})
	}
	fr := sqliteFrontier(t, t.TempDir(), jobs...)
	lim := limiterWith(t, limit.Config{FirstGuess: limit.PerSecond(1000)}, "direct")
	var log syncbuf.Buffer
	core := NewCore(CoreConfig{Concurrency: 8, Logger: slog.New(slog.NewTextHandler(&log, nil)),
		Retry: RetryPolicy{MaxRetries: 1, Backoff: backoff.Policy{Base: time.Millisecond, Cap: time.Millisecond}}}, fr, lim, nil)
	eng, err := NewEngine(EngineConfig{Exits: ExitMap(map[string]http.RoundTripper{"direct": http.DefaultTransport.(*http.Transport).Clone()}), Timeout: 200 * time.Millisecond}, core)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := eng.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the run took %v with a 200ms timeout and one retry", d)
	}
	if c, _ := fr.Counts(ctx); c.Done != 3 || c.Abandoned != 3 {
		t.Errorf("after the run: %d done, %d abandoned; want the 3 answered done, the 3 stalled abandoned", c.Done, c.Abandoned)
	}
	said := func(srv *httptest.Server) []string {
		var lines []string
		for _, l := range strings.Split(log.String(), "\n") {
			if strings.Contains(l, "level=WARN") && strings.Contains(l, "does not answer in time") && strings.Contains(l, strings.TrimPrefix(srv.URL, "http://")) {
				lines = append(lines, l)
			}
		}
		return lines
	}
	for _, c := range []struct {
		srv  *httptest.Server
		want string
	}{{hang, "stalled=\"no response headers\""}, {trickle, "stalled=\"headers came, body still arriving (1 bytes)\""}} {
		lines := said(c.srv)
		if len(lines) != 1 || !strings.Contains(lines[0], c.want) {
			t.Errorf("log lines on %s's timeouts: %q, want one saying %s\nlog:\n%s", c.srv.URL, lines, c.want, log.String())
		}
	}
	if lines := said(ok); len(lines) != 0 {
		t.Errorf("log says a host that answered does not answer in time: %q", lines)
	}
}

// hiding is a frontier shared with other workers that has work it does
// not announce: until the instant from, it offers no job to claim and says
// nothing falls due (Ready's Next zero), while its counts hold the jobs, as
// a Redis frontier whose schedule missed a host until a repair.
type hiding struct {
	frontier.Frontier
	from time.Time
}

func (h *hiding) Claim(ctx context.Context, now time.Time, max int, hostOK func(string) bool) ([]frontier.Job, error) {
	if time.Now().Before(h.from) {
		return nil, nil
	}
	return h.Frontier.Claim(ctx, now, max, hostOK)
}

func (h *hiding) Ready(ctx context.Context, now time.Time, max int) (frontier.Ready, error) {
	if time.Now().Before(h.from) {
		return frontier.Ready{}, nil
	}
	return h.Frontier.Ready(ctx, now, max)
}

func (h *hiding) Unwrap() frontier.Frontier { return h.Frontier }

// TestEngineRechecksUnannouncedWork: work the frontier did not announce is
// found within Recheck. The engine, told nothing fell due while the counts
// held unfinished jobs, slept an hour (seen once with three workers through
// Redis, all idle for 50 s after an outage with 298 of 400 URLs to do).
func TestEngineRechecksUnannouncedWork(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	ctx := context.Background()
	inner := sqliteFrontier(t, t.TempDir(), frontier.NewJob{URL: srv.URL + "/1"}, frontier.NewJob{URL: srv.URL + "/2"})
	fr := &hiding{Frontier: inner, from: time.Now().Add(300 * time.Millisecond)}
	lim := limiterWith(t, limit.Config{FirstGuess: limit.PerSecond(1000)}, "direct")
	core := NewCore(CoreConfig{Concurrency: 2}, fr, lim, nil)
	eng, err := NewEngine(EngineConfig{Exits: ExitMap(map[string]http.RoundTripper{"direct": http.DefaultTransport.(*http.Transport).Clone()}), Recheck: 200 * time.Millisecond}, core)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := eng.Run(runCtx); err != nil {
		t.Fatal(err)
	}
	if c, _ := inner.Counts(ctx); c.Done != 2 {
		t.Fatalf("after %v: %d of 2 done", time.Since(start).Round(time.Millisecond), c.Done)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the unannounced work was found after %v, want within the 200ms recheck of its coming due", d)
	}
}
