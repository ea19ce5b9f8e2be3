package fetch

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exitgate/exitgate/backoff"
	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/sqlite"
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

// twoHidden runs an engine over two jobs of a server answering h, through
// the frontier wrap makes of theirs (a hiding one), with lease as the
// Core's LeaseTTL and cfg's Recheck and StallAfter, for 10 s at most. It
// fails unless both are done, and returns the log (debug level) and how
// long the run took.
func twoHidden(t *testing.T, h http.Handler, wrap func(frontier.Frontier) frontier.Frontier, lease time.Duration, cfg EngineConfig) (string, time.Duration) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx := context.Background()
	inner := sqliteFrontier(t, t.TempDir(), frontier.NewJob{URL: srv.URL + "/1"}, frontier.NewJob{URL: srv.URL + "/2"})
	lim := limiterWith(t, limit.Config{FirstGuess: limit.PerSecond(1000)}, "direct")
	var log syncbuf.Buffer
	core := NewCore(CoreConfig{Concurrency: 2, LeaseTTL: lease, Logger: slog.New(slog.NewTextHandler(&log, nil))}, wrap(inner), lim, nil)
	cfg.Exits = ExitMap(map[string]http.RoundTripper{"direct": http.DefaultTransport.(*http.Transport).Clone()})
	eng, err := NewEngine(cfg, core)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := eng.Run(runCtx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if c, _ := inner.Counts(ctx); c.Done != 2 {
		t.Fatalf("after %v: %d of 2 done\nlog:\n%s", took.Round(time.Millisecond), c.Done, log.String())
	}
	return log.String(), took
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })

// TestEngineRechecksUnannouncedWork: work the frontier did not announce is
// found within Recheck. The engine, told nothing fell due while the counts
// held unfinished jobs, slept an hour (seen once with three workers through
// Redis, all idle for 50 s after an outage with 298 of 400 URLs to do).
func TestEngineRechecksUnannouncedWork(t *testing.T) {
	_, took := twoHidden(t, okHandler, func(inner frontier.Frontier) frontier.Frontier {
		return &hiding{Frontier: inner, from: time.Now().Add(300 * time.Millisecond)}
	}, 0, EngineConfig{Recheck: 200 * time.Millisecond})
	if took > 2*time.Second {
		t.Errorf("the unannounced work was found after %v, want within the 200ms recheck of its coming due", took)
	}
}

// TestEngineSaysStall: a crawl that sends nothing while URLs are left says
// why. Work the frontier hides (it says nothing falls due while its counts
// hold two queued jobs) is a stall nothing known explains: a warning with
// the counts, then, when the work shows, a line that requests go again. A
// host held by a 429's Retry-After is a wait: said at info level, with the
// host and why.
func TestEngineSaysStall(t *testing.T) {
	run := func(t *testing.T, h http.HandlerFunc, hide time.Duration, held bool, lease time.Duration) string {
		log, _ := twoHidden(t, h, func(inner frontier.Frontier) frontier.Frontier {
			hd := &hiding{Frontier: inner, from: time.Now().Add(hide)}
			if held {
				return holdingHiding{hd}
			}
			return hd
		}, lease, EngineConfig{Recheck: 50 * time.Millisecond, StallAfter: 200 * time.Millisecond})
		return log
	}
	ok := okHandler.ServeHTTP
	lines := func(log, level, text string) []string {
		var out []string
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "level="+level) && strings.Contains(l, text) {
				out = append(out, l)
			}
		}
		return out
	}

	t.Run("Unexplained", func(t *testing.T) {
		log := run(t, ok, 700*time.Millisecond, false, 0)
		warn := lines(log, "WARN", "engine: nothing sent for")
		if len(warn) == 0 || !strings.Contains(warn[0], "2 URLs unfinished (2 queued, 0 leased, 0 parked; 0 claimed here)") ||
			!strings.Contains(warn[0], "the frontier says nothing falls due") {
			t.Errorf("warnings %q, want one saying 2 queued and nothing due\nlog:\n%s", warn, log)
		}
		// Said at 0.2 s idle, then after twice as long each time.
		var last time.Duration
		for _, w := range warn {
			var d time.Duration
			if _, after, ok := strings.Cut(w, "nothing sent for "); ok {
				d, _ = time.ParseDuration(strings.Fields(after)[0])
			}
			if d < 2*last-100*time.Millisecond {
				t.Errorf("said at %v idle after %v, want twice as long each time: %q", d, last, warn)
			}
			last = d
		}
		if again := lines(log, "INFO", "engine: sending again after"); len(again) != 1 {
			t.Errorf("lines saying requests go again: %q, want one\nlog:\n%s", again, log)
		}
	})
	// throttledOnce answers its first request 429 with Retry-After ra,
	// the others ok.
	throttledOnce := func(ra string) http.HandlerFunc {
		var n atomic.Int32
		return func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				w.Header().Set("Retry-After", ra)
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			ok(w, r)
		}
	}
	// saidAsWait checks that the log says a wait, at info level, its first
	// line holding each of want, and no stall.
	saidAsWait := func(t *testing.T, log string, want ...string) {
		t.Helper()
		if warn := lines(log, "WARN", "engine: nothing sent"); len(warn) != 0 {
			t.Errorf("a wait said as a stall: %q", warn)
		}
		info := lines(log, "INFO", "engine: nothing sent for")
		for _, w := range want {
			if len(info) == 0 || !strings.Contains(info[0], w) {
				t.Errorf("info lines %q, want the first to say %q\nlog:\n%s", info, w, log)
			}
		}
	}
	t.Run("Wait", func(t *testing.T) {
		log := run(t, throttledOnce("1"), 0, false, 0)
		saidAsWait(t, log, " waits until ", "429")
	})
	t.Run("HandedBack", func(t *testing.T) {
		// A host held longer than half a lease gives its jobs back to
		// the frontier, which says they are due: still this worker's
		// wait, not a stall.
		log := run(t, throttledOnce("2"), 0, false, time.Second)
		saidAsWait(t, log, "0 claimed here", " waits until ")
	})
	t.Run("Held", func(t *testing.T) {
		log := run(t, ok, 700*time.Millisecond, true, 0)
		saidAsWait(t, log, "; held on purpose")
	})
}

// holdingHiding is hiding that says why it holds its work (Holder), as a
// distributed worker with no exit does.
type holdingHiding struct{ *hiding }

func (h holdingHiding) Holding() string {
	if time.Now().Before(h.from) {
		return "held on purpose"
	}
	return ""
}

// TestStallExplained: which stalls are waits a known thing explains and
// which are said as warnings.
func TestStallExplained(t *testing.T) {
	at := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	queued := frontier.Counts{Queued: 5}
	for _, c := range []struct {
		name string
		s    Stall
		want bool
	}{
		{"work due now, none claimed", Stall{Counts: queued, Due: []string{"a.example"}}, false},
		{"nothing due, no time given", Stall{Counts: queued}, false},
		{"due within a second all along (a distributed worker's frontier)", Stall{Counts: queued, Next: at.Add(time.Second)}, false},
		{"due later", Stall{Counts: queued, Next: at.Add(time.Minute)}, true},
		{"a host of this worker waits", Stall{Counts: queued, Due: []string{"a.example"}, Waits: []HostWait{{Host: "a.example", Until: at.Add(time.Minute)}}}, true},
		{"a host held with no time given", Stall{Counts: queued, Waits: []HostWait{{Host: "a.example"}}}, false},
		{"every URL left leased", Stall{Counts: frontier.Counts{Leased: 3}}, true},
		{"the frontier holds it on purpose", Stall{Counts: queued, Due: []string{"a.example"}, Held: "stand by"}, true},
		{"due, and held here with its jobs given back", Stall{Counts: queued, Due: []string{"a.example"}, Waits: []HostWait{{Host: "a.example", Until: at.Add(3 * time.Minute)}}}, true},
		{"one host waits, another due and unclaimed", Stall{Counts: queued, Due: []string{"b.example"}, Waits: []HostWait{{Host: "a.example", Until: at.Add(time.Minute)}}}, false},
		{"all claimed here, held with no time given", Stall{Counts: frontier.Counts{Leased: 2}, Buffered: 2, Waits: []HostWait{{Host: "a.example"}}}, false},
	} {
		c.s.At = at
		if got := c.s.Explained(); got != c.want {
			t.Errorf("%s: Explained() = %v, want %v (%s)", c.name, got, c.want, c.s)
		}
	}
}

// TestStallSaysHeldSince: a host the limiter put off again and again says
// since when, beside the wait it was last given; a wait given once does
// not.
func TestStallSaysHeldSince(t *testing.T) {
	at := time.Date(2026, 12, 6, 11, 35, 47, 0, time.UTC)
	s := Stall{At: at, For: 30 * time.Second, Counts: frontier.Counts{Leased: 96}, Buffered: 64, Waits: []HostWait{
		{Host: "a.example", Until: at.Add(time.Second), Why: "its pace", Since: at.Add(-32 * time.Second)},
		{Host: "b.example", Until: at.Add(time.Minute), Why: "status 429, Retry-After 1m0s", Since: at},
	}}
	want := "a.example waits until 11:35:48 (its pace; held back since 11:35:15); b.example waits until 11:36:47 (status 429, Retry-After 1m0s)"
	if got := s.String(); !strings.Contains(got, want) {
		t.Errorf("stall line %q, want it to say %q", got, want)
	}
}

// repairable is hiding whose schedule a Repair mends (Repairer), as a Redis
// frontier's schedule missing a host is rebuilt from the hosts' own state.
type repairable struct {
	*hiding
	repairs atomic.Int32
}

func (r *repairable) Repair(ctx context.Context) error {
	r.repairs.Add(1)
	r.from = time.Now()
	return nil
}

// TestEngineRepairsOnStall: at a stall nothing known explains, the engine
// asks the frontier to rebuild its schedule (Repairer), and work the
// schedule had lost goes on at once instead of never.
func TestEngineRepairsOnStall(t *testing.T) {
	var fr *repairable
	log, took := twoHidden(t, okHandler, func(inner frontier.Frontier) frontier.Frontier {
		fr = &repairable{hiding: &hiding{Frontier: inner, from: time.Now().Add(time.Hour)}}
		return fr
	}, 0, EngineConfig{Recheck: 50 * time.Millisecond, StallAfter: 200 * time.Millisecond})
	if took > 3*time.Second {
		t.Errorf("both done after %v, want soon after the 200ms stall line", took.Round(time.Millisecond))
	}
	if n := fr.repairs.Load(); n != 1 || !strings.Contains(log, "engine: asked the frontier to rebuild its schedule") {
		t.Errorf("%d repairs, want one, said in the log:\n%s", n, log)
	}
}

// receding is a Limiter that never lets a request go and each time says
// to ask again a little later, as a limiter following another worker's
// search answers however long its lanes' wait is.
type receding struct{ noopLimiter }

func (receding) Acquire(_ string, _ limit.Want, now time.Time) (limit.Ticket, bool, time.Time, error) {
	return limit.Ticket{}, false, now.Add(100 * time.Millisecond), nil
}

// TestHeldWaitsAddUp: a host the limiter holds back again and again, each
// time for a moment, gives its jobs back to the frontier once the waits add
// up to half a lease, for another worker that may send them; until then
// they stay claimed here.
func TestHeldWaitsAddUp(t *testing.T) {
	ctx := context.Background()
	fr := sqliteFrontier(t, t.TempDir(), frontier.NewJob{URL: "http://a.example/1"}, frontier.NewJob{URL: "http://a.example/2"})
	core := NewCore(CoreConfig{Concurrency: 2, LeaseTTL: time.Second}, fr, receding{}, nil)
	t0 := time.Now()
	for _, step := range []struct {
		at     time.Duration
		leased int
	}{
		{0, 2}, {200 * time.Millisecond, 2}, {450 * time.Millisecond, 2},
		{550 * time.Millisecond, 0}, // waited since 0: past half a lease
	} {
		now := t0.Add(step.at)
		if atts, _, err := core.Dispatch(ctx, now); err != nil || len(atts) != 0 {
			t.Fatalf("at %v: Dispatch = %d attempts, %v; want none", step.at, len(atts), err)
		}
		c, err := fr.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.Leased != step.leased || c.Queued != 2-step.leased {
			t.Errorf("at %v: %d leased, %d queued; want %d leased", step.at, c.Leased, c.Queued, step.leased)
		}
	}
}

// TestRobotsOutageBuffersOnce: a host whose robots.txt stays unreachable
// holds its URLs; past half a lease they go back to the frontier, as a
// limiter's long wait hands them back, and a job the frontier gives out
// again while buffered is not buffered twice. Kept past their leases, the
// frontier gave them out again and each was buffered twice: the park that
// ended the outage said 40 URLs of 20, and settled each twice.
func TestRobotsOutageBuffersOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	ctx := context.Background()
	dir := t.TempDir()
	fr, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "f.db"), Lease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	if _, err := fr.Push(ctx, []frontier.NewJob{{URL: srv.URL + "/1"}, {URL: srv.URL + "/2"}, {URL: srv.URL + "/3"}}); err != nil {
		t.Fatal(err)
	}
	lim := limiterWith(t, limit.Config{FirstGuess: limit.PerSecond(1000)}, "direct")
	var log syncbuf.Buffer
	retry := RetryPolicy{MaxWait: 3 * time.Second, Backoff: backoff.Policy{Base: 100 * time.Millisecond, Cap: 200 * time.Millisecond}}
	core := NewCore(CoreConfig{Concurrency: 2, LeaseTTL: time.Second, Robots: true, Retry: retry,
		Logger: slog.New(slog.NewTextHandler(&log, nil))}, fr, lim, nil)
	eng, err := NewEngine(EngineConfig{Exits: ExitMap(map[string]http.RoundTripper{"direct": http.DefaultTransport.(*http.Transport).Clone()})}, core)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := eng.Run(runCtx); err != nil {
		t.Fatal(err)
	}
	if c, _ := fr.Counts(ctx); c.Parked != 3 {
		t.Errorf("counts %+v, want the 3 URLs parked", c)
	}
	if !strings.Contains(log.String(), "its URLs are parked") || !strings.Contains(log.String(), "urls=3") || strings.Contains(log.String(), "lease") {
		t.Errorf("the park should name 3 URLs, with no lease lost:\n%s", log.String())
	}
}
