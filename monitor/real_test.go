package monitor_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/memory"
	"github.com/exitgate/exitgate/internal/peers"
	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/internal/syncbuf"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/monitor"
	"github.com/exitgate/exitgate/pool"
)

// TestRealServersTurnHostile crawls two real nginx targets (5 r/s per
// client address) through twelve tinyproxy exits, each bound to its own
// loopback address, with a monitor whose minutes are seconds (a 15 s
// window, an alert after 8 s over budget, the breaker after 25 s, a
// quarantine 3 s after a flag). After 8 s, target A locks everyone out
// (every request 429) for 30 s; target B gives two exits a fifth of the
// others' budget and blocks a third. The monitor must alert on A and open
// its breaker (its URLs parked, none abandoned), close it once A is back;
// flag and quarantine B's two slow exits on B before B's breaker would
// open, show the blocked one banned; leave B's other exits alone; and
// /metrics must show all of it. About 50 s.
func TestRealServersTurnHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("45 s against real nginx and tinyproxy")
	}
	page := map[string]string{"page.txt": "page\n"}
	var binds []string
	for i := 11; i <= 22; i++ {
		binds = append(binds, fmt.Sprintf("127.0.0.%d", i))
	}
	ngxA := peertest.StartNginx(t, peertest.NginxConfig{Rate: "5r/s", Burst: 1, Files: page, Fallback: "page.txt"})
	ngxB := peertest.StartNginx(t, peertest.NginxConfig{Rate: "5r/s", Burst: 1, Files: page, Fallback: "page.txt",
		SlowAddrs: binds[:2], SlowRate: "1r/s", Block: binds[2:3]})
	exitOf := map[string]string{} // bind address -> exit id
	var members []fetch.Member
	for _, b := range binds {
		p := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: b})
		exits, err := pool.Parse(strings.NewReader(p.URL()+"\n"), "proxies")
		if err != nil {
			t.Fatal(err)
		}
		e := exits[0]
		exitOf[b] = e.ID()
		members = append(members, fetch.Member{ID: e.ID(), Transport: e.Transport(pool.TransportConfig{ResponseHeaderTimeout: 5 * time.Second})})
	}
	hostA, hostB := strings.TrimPrefix(ngxA.URL(), "http://"), strings.TrimPrefix(ngxB.URL(), "http://")

	ctx := context.Background()
	fr, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	var jobs []frontier.NewJob
	for i := range 2000 {
		jobs = append(jobs, frontier.NewJob{URL: fmt.Sprintf("%s/p/%d", ngxA.URL(), i)}, frontier.NewJob{URL: fmt.Sprintf("%s/p/%d", ngxB.URL(), i)})
	}
	if _, err := fr.Push(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	var logBuf syncbuf.Buffer
	// EXITGATE_HOSTILE_LOG=debug: every learning decision in the log, and
	// the whole log in the test's output (=1: the tables below on a pass).
	level := slog.LevelInfo
	if os.Getenv("EXITGATE_HOSTILE_LOG") == "debug" {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: level}))
	lim, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(4), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	// B's budget is 2%: over a 15-s window (the default's minute in
	// seconds) its ~500 answers hold 5 429s at 1%, and a stall of nginx
	// under the whole suite's load drew one on each of five good lanes at
	// once, which kept B over 1% for the 25 s its breaker waits. Its bad
	// exits, not held back, draw 46% 429s on two lanes of eleven: far over
	// either budget.
	m, err := monitor.New(monitor.Config{
		Budgets: map[string]float64{hostB: 0.02},
		Window:  15 * time.Second, AlertAfter: 8 * time.Second, BreakAfter: 25 * time.Second,
		Cooldown: 6 * time.Second, CooldownMax: 12 * time.Second,
		FlagWindow: 10 * time.Second, QuarantineAfter: 3 * time.Second, QuarantineFor: time.Minute,
		FallSpan: 20 * time.Second, Every: 250 * time.Millisecond, Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	tally := metrics.NewTally(time.Now())
	exits := fetch.NewExitSet(members, nil, lim.SetExits)
	core := fetch.NewCore(fetch.CoreConfig{Concurrency: 16, Logger: logger}, m.CountParks(fr), m.Gate(lim), tally)
	m.Attach(monitor.Sources{Limiter: lim, Tally: tally, Counts: fr.Counts, Waiting: core.Waiting, Park: core.ParkHost, Quarantine: lim.Quarantine})
	engine, err := fetch.NewEngine(fetch.EngineConfig{Exits: exits, Timeout: 5 * time.Second}, core)
	if err != nil {
		t.Fatal(err)
	}
	reg := metrics.NewRegistry()
	for _, c := range append(metrics.Collectors(tally, metrics.Options{}), m.Collector(), metrics.StateCollector(m.MetricsState)) {
		reg.MustRegister(c)
	}
	scrape := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer scrape.Close()

	runCtx, cancel := context.WithTimeout(ctx, 80*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = m.Run(runCtx) }()
	var runErr error
	go func() { defer wg.Done(); runErr = engine.Run(runCtx) }()

	start := time.Now()
	turn := func(n *peertest.Nginx, name string, on bool) {
		t.Helper()
		if err := n.Turn(name, on); err != nil {
			t.Fatal(err)
		}
	}
	sleepUntil := func(d time.Duration) { time.Sleep(time.Until(start.Add(d))) } // the test's script, in seconds
	sleepUntil(8 * time.Second)
	turned := time.Now()
	turn(ngxA, peers.TurnLockout, true)
	turn(ngxB, peers.TurnSlow, true)
	turn(ngxB, peers.TurnBan, true)
	sleepUntil(38 * time.Second)
	calmed := time.Now()
	turn(ngxA, peers.TurnLockout, false)
	// Wait (bounded) for A's breaker to close, then stop.
	for deadline := time.Now().Add(25 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if len(kinds(m, monitor.KindBreakerClosed)[hostA]) > 0 {
			break
		}
	}
	time.Sleep(2 * time.Second) // A's URLs go again
	resp, err := http.Get(scrape.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	engine.Stop()
	cancel()
	wg.Wait()
	if runErr != nil {
		t.Errorf("engine: %v", runErr)
	}

	evs := m.Events()
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "  %6.1fs %-18s %-16s %-16s %s\n", e.At.Sub(start).Seconds(), e.Kind, e.Host, e.Exit, e.Message)
	}
	t.Logf("turned at %.1fs, calmed at %.1fs; events:\n%s", turned.Sub(start).Seconds(), calmed.Sub(start).Seconds(), b.String())

	first := func(kind, key string) time.Duration {
		if ts := kinds(m, kind)[key]; len(ts) > 0 {
			return ts[0].Sub(turned)
		}
		return -1
	}
	check := func(what string, d, most time.Duration) {
		t.Helper()
		if d < 0 || d > most {
			t.Errorf("%s %v after the turn, want within %v", what, d, most)
		} else {
			t.Logf("%s %.1fs after the turn (bound %v)", what, d.Seconds(), most)
		}
	}
	check("A: alert", first(monitor.KindOverBudget, hostA), 12*time.Second)
	check("A: breaker open", first(monitor.KindBreakerOpen, hostA), 29*time.Second)
	if d := first(monitor.KindOverBudget, hostA); d >= 0 && d < 8*time.Second {
		t.Errorf("A: alert %v after the turn, before AlertAfter", d)
	}
	if c := kinds(m, monitor.KindBreakerClosed)[hostA]; len(c) == 0 || c[0].Sub(calmed) > 20*time.Second {
		t.Errorf("A: breaker closed at %v, want within 20s of the lockout's end", c)
	}
	for _, bind := range binds[:2] {
		check("B: "+bind+" flagged", first(monitor.KindExitFlagged, exitOf[bind]), 10*time.Second)
		check("B: "+bind+" quarantined", first(monitor.KindExitQuarantined, exitOf[bind]), 12*time.Second)
	}
	check("B: "+binds[2]+" banned", first(monitor.KindExitBanned, exitOf[binds[2]]), 5*time.Second)
	for _, bind := range binds[3:] {
		for _, k := range []string{monitor.KindExitFlagged, monitor.KindExitBanned} {
			if ts := kinds(m, k)[exitOf[bind]]; len(ts) > 0 {
				t.Errorf("B: %s (%s) %s at %v: a good exit", bind, exitOf[bind], k, ts)
			}
		}
	}
	// B may be over budget for a window's worth of its bad exits' 429s,
	// but they are held back before its breaker would open.
	if ts := kinds(m, monitor.KindBreakerOpen)[hostB]; len(ts) > 0 {
		t.Errorf("B: breaker opened at %v; its bad exits are held back, not the host", ts)
	}
	c, _ := fr.Counts(ctx)
	if c.Abandoned != 0 {
		t.Errorf("%d URLs abandoned (%v): the breaker parks, never abandons", c.Abandoned, c.AbandonedByReason)
	}
	if parked := m.Status(false).ParkedByReason["circuit breaker"]; parked == 0 {
		t.Errorf("no URL parked by the breaker: %v", m.Status(false).ParkedByReason)
	}
	if !strings.Contains(logBuf.String(), "level=WARN msg=\"monitor: 429s over budget") {
		t.Errorf("no WARN line for A's alert")
	}
	for _, want := range []string{
		`exitgate_monitor_events_total{kind="breaker_open"}`,
		`exitgate_monitor_events_total{kind="exit_quarantined"}`,
		fmt.Sprintf(`exitgate_breaker_trips_total{host=%q}`, hostA),
		fmt.Sprintf(`exitgate_exit_reputation{exit=%q,host=%q,state="quarantined"} 1`, exitOf[binds[0]], hostB),
		fmt.Sprintf(`exitgate_exit_reputation{exit=%q,host=%q,state="banned"} 1`, exitOf[binds[2]], hostB),
		fmt.Sprintf(`exitgate_requests_total{host=%q,status="429"}`, hostA),
		`exitgate_parked_total{reason="circuit breaker"}`,
		`exitgate_jobs{state="queued"}`, "go_goroutines", "process_resident_memory_bytes",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() || os.Getenv("EXITGATE_HOSTILE_LOG") != "" {
		t.Logf("/metrics:\n%s", grepLines(string(body), "exitgate_"))
		t.Logf("B's 429s by exit, 5 s a column from the start:\n%s", throttledBySpan(ngxB.AccessLog(t, 0), start, 5*time.Second))
		t.Logf("B in the log:\n%s", grepLines(logBuf.String(), hostB))
	}
}

// throttledBySpan tabulates an access log's 429s by client address, one
// column per span from start: where a host's 429s came from, and when.
func throttledBySpan(log []peertest.AccessEntry, start time.Time, span time.Duration) string {
	rows := map[string][]int{}
	var addrs []string
	for _, e := range log {
		if e.Status != http.StatusTooManyRequests {
			continue
		}
		i := int(e.Time.Sub(start) / span)
		if i < 0 {
			i = 0
		}
		r, ok := rows[e.RemoteAddr]
		if !ok {
			addrs = append(addrs, e.RemoteAddr)
		}
		for len(r) <= i {
			r = append(r, 0)
		}
		r[i]++
		rows[e.RemoteAddr] = r
	}
	sort.Strings(addrs)
	var b strings.Builder
	for _, a := range addrs {
		fmt.Fprintf(&b, "  %-12s %v\n", a, rows[a])
	}
	return b.String()
}

func kinds(m *monitor.Monitor, kind string) map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, e := range m.Events() {
		if e.Kind != kind {
			continue
		}
		k := e.Host
		if e.Exit != "" {
			k = e.Exit
		}
		out[k] = append(out[k], e.At)
	}
	return out
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
