package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/verdict"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestTallyCounts(t *testing.T) {
	ta := NewTally(t0)
	ta.Record(Event{Host: "a", Exit: "e1", Status: 200, Verdict: verdict.OK, Bytes: 10, At: t0.Add(time.Second)})
	ta.Record(Event{Host: "a", Exit: "e2", Status: 429, Verdict: verdict.Throttled, At: t0.Add(time.Second)})
	ta.Record(Event{Host: "b", Exit: "e1", Status: 0, Verdict: verdict.Retryable, At: t0.Add(2 * time.Second)})
	ta.Record(Event{Host: "b", Exit: "e1", Status: 200, Verdict: verdict.OK, At: t0.Add(3 * time.Second)})
	ta.Abandon("b", "e1", "status 404")
	ta.HeldBack("a", 1500*time.Millisecond)
	ta.Done("a", "e1")
	ta.Done("b", "e1")
	ta.Retry("b", "e1")

	s := ta.Snapshot(t0.Add(4 * time.Second))
	if s.Total.Requests != 4 || s.Total.Successes != 2 || s.Total.Throttled429 != 1 || s.Total.TransportErrors != 1 {
		t.Errorf("total = %+v, want 4 requests, 2 successes, one 429, one transport error", s.Total)
	}
	if got := s.Total.Ratio429(); got != 0.25 {
		t.Errorf("Ratio429 = %v, want 0.25", got)
	}
	if got := s.EffectiveRate(); got != 0.5 {
		t.Errorf("EffectiveRate = %v, want 0.5 (2 URLs done in 4 s)", got)
	}
	if got := s.Total.RetriesPerSuccess(); got != 0.5 {
		t.Errorf("RetriesPerSuccess = %v, want 0.5 (1 retry, 2 done)", got)
	}
	if s.Exits[0].Done != 2 || s.Hosts[1].Retries != 1 || s.Exits[0].Retries != 1 {
		t.Errorf("Done/Retries not counted per exit and host: %+v %+v", s.Exits[0], s.Hosts[1])
	}
	if len(s.Hosts) != 2 || s.Hosts[0].Name != "a" || s.Hosts[0].HeldBackSeconds != 1.5 {
		t.Errorf("hosts = %+v, want a (1.5 s held back) then b", s.Hosts)
	}
	if s.Hosts[1].Abandoned["status 404"] != 1 || s.Total.Abandoned["status 404"] != 1 || s.Exits[0].Abandoned["status 404"] != 1 {
		t.Errorf("abandoned not counted per host, per exit and in total: %+v %+v", s.Hosts[1].Abandoned, s.Exits[0].Abandoned)
	}
	if len(s.Exits) != 2 || s.Exits[0].Requests != 3 {
		t.Errorf("exits = %+v, want e1 with 3 requests", s.Exits)
	}
	// The snapshot is a copy.
	s.Total.ByStatus[200] = 99
	if ta.Snapshot(t0).Total.ByStatus[200] != 2 {
		t.Errorf("Snapshot shares its maps with the tally")
	}
}

func TestRollingRatioForgetsOldSeconds(t *testing.T) {
	var r rolling
	for i := range 10 {
		r.add(t0.Add(time.Duration(i)*time.Second), true)
	}
	r.add(t0.Add(70*time.Second), false)
	if got := r.ratio(t0.Add(70 * time.Second)); got != 0 {
		t.Errorf("ratio after 60 s = %v, want 0: the old 429s fell out", got)
	}
	r.add(t0.Add(71*time.Second), true)
	if got := r.ratio(t0.Add(71 * time.Second)); got != 0.5 {
		t.Errorf("ratio = %v, want 0.5", got)
	}
}

func TestPrometheusMatchesTally(t *testing.T) {
	ta := NewTally(t0)
	reg := prometheus.NewPedanticRegistry()
	if err := Register(reg, ta); err != nil {
		t.Fatal(err)
	}
	ta.Record(Event{Host: "a", Exit: "e1", Status: 429, Verdict: verdict.Throttled, RetryAfter: 2 * time.Second, HasRetryAfter: true, At: time.Now()})
	ta.Abandon("a", "x1", "retries exhausted")
	want := `
# HELP exitgate_abandoned_total URLs given up, by host and reason.
# TYPE exitgate_abandoned_total counter
exitgate_abandoned_total{host="a",reason="retries exhausted"} 1
# HELP exitgate_requests_total Requests sent, by host and response status (0 = transport error; aborted = cut short by the crawl's own stop).
# TYPE exitgate_requests_total counter
exitgate_requests_total{host="a",status="429"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "exitgate_requests_total", "exitgate_abandoned_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "exitgate_retry_after_seconds"); n != 1 {
		t.Errorf("retry-after histogram series = %d, want 1", n)
	}
}

// TestHeldBackAhead: a hold that ends ahead of a snapshot counts only up
// to the snapshot's time (a day's Retry-After once read 86,407 s held
// back after a 7-s run); once past, whole.
func TestHeldBackAhead(t *testing.T) {
	ta := NewTally(t0)
	ta.HeldBack("a", 2*time.Second)
	ta.HeldBackUntil("b", t0.Add(time.Second), t0.Add(24*time.Hour))
	s := ta.Snapshot(t0.Add(7 * time.Second))
	if s.Total.HeldBackSeconds != 8 || s.Hosts[0].HeldBackSeconds != 2 || s.Hosts[1].HeldBackSeconds != 6 {
		t.Errorf("held back at 7 s: total %v, a %v, b %v; want 8, 2, 6", s.Total.HeldBackSeconds, s.Hosts[0].HeldBackSeconds, s.Hosts[1].HeldBackSeconds)
	}
	if s := ta.Snapshot(t0.Add(25 * time.Hour)); s.Hosts[1].HeldBackSeconds != 24*3600-1 {
		t.Errorf("held back after the hold: b %v, want the whole of it", s.Hosts[1].HeldBackSeconds)
	}
}

// TestHostSeriesBounded: past Options.HostSeries, hosts add up under
// host="_other" in every per-host series, the Retry-After histogram's too
// (1,000 hosts made 21,000 series); a 404 is no abandoned URL.
func TestHostSeriesBounded(t *testing.T) {
	ta := NewTally(t0)
	reg := prometheus.NewPedanticRegistry()
	if err := RegisterWith(reg, ta, Options{HostSeries: 2}); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"a", "b", "c", "d"} {
		ta.Record(Event{Host: h, Exit: "e1", Status: 429, Verdict: verdict.Throttled, RetryAfter: 2 * time.Second, HasRetryAfter: true, At: time.Now()})
		ta.Abandon(h, h+"1", "retries exhausted")
		ta.Abandon(h, h+"2", "status 404")
	}
	want := `
# HELP exitgate_abandoned_total URLs given up, by host and reason.
# TYPE exitgate_abandoned_total counter
exitgate_abandoned_total{host="_other",reason="retries exhausted"} 2
exitgate_abandoned_total{host="a",reason="retries exhausted"} 1
exitgate_abandoned_total{host="b",reason="retries exhausted"} 1
# HELP exitgate_requests_total Requests sent, by host and response status (0 = transport error; aborted = cut short by the crawl's own stop).
# TYPE exitgate_requests_total counter
exitgate_requests_total{host="_other",status="429"} 2
exitgate_requests_total{host="a",status="429"} 1
exitgate_requests_total{host="b",status="429"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "exitgate_requests_total", "exitgate_abandoned_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "exitgate_retry_after_seconds"); n != 3 {
		t.Errorf("retry-after histogram series = %d, want 3 (a, b, _other)", n)
	}
}

// TestLimitHosts: past LimitHosts, later hosts are counted together in
// OtherHosts, and the total still counts everything.
func TestLimitHosts(t *testing.T) {
	tl := NewTally(time.Unix(0, 0))
	tl.LimitHosts(2)
	for i := range 5 {
		host := fmt.Sprintf("h%d", i)
		tl.Record(Event{Host: host, Status: 200, Verdict: verdict.OK, At: time.Unix(1, 0)})
		tl.HeldBackUntil(host, time.Unix(1, 0), time.Unix(2, 0))
	}
	s := tl.Snapshot(time.Unix(3, 0))
	names := map[string]int64{}
	for _, h := range s.Hosts {
		names[h.Name] = h.Requests
	}
	if len(names) != 3 || names["h0"] != 1 || names["h1"] != 1 || names[OtherHosts] != 3 || s.Total.Requests != 5 {
		t.Errorf("hosts %v, total %d; want h0 and h1 on their own, 3 in %q, 5 in all", names, s.Total.Requests, OtherHosts)
	}
	if len(tl.heldTo) > 2 {
		t.Errorf("%d hosts' holds kept, want the 2 counted on their own", len(tl.heldTo))
	}
}
