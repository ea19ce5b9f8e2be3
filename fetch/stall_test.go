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
