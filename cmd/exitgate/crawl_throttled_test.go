package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/exitgate/exitgate/limit"
)

// TestCrawlThrottledSecondsIsTimeSpent: a 429 and a 503 with absurd
// Retry-After values (centuries) park their URLs; throttled_seconds counts
// the pushback the run lived through, at most its length per lane and pause,
// not the centuries promised. It used to saturate at 292 years.
func TestCrawlThrottledSecondsIsTimeSpent(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/p/000" {
				w.Header().Set("Retry-After", "99999999999")
				w.WriteHeader(status)
				return
			}
			fmt.Fprintln(w, "page")
		}))
		dir := t.TempDir()
		urls := siteURLs(srv.URL, 3)
		out, crawl := crawlList(t, dir, urls, "--ignore-robots", "--lane-rate", "50/s", "--concurrency", "1", "--progress", "0")
		r := crawl()
		srv.Close()
		if code := exitCode(r.err); code != exitUnfinished {
			t.Errorf("status %d: %v (exit %d), want exit %d (a URL parked)", status, r.err, code, exitUnfinished)
		}
		sum := readSummary(t, out)
		if sum.Parked < 1 {
			t.Errorf("status %d: %d parked, want the URL with the absurd Retry-After parked", status, sum.Parked)
		}
		// One lane and one host pause, each at most the run's length.
		if limit := 2*sum.ElapsedSeconds + 0.1; sum.ThrottledSeconds < 0 || sum.ThrottledSeconds > limit {
			t.Errorf("status %d: throttled_seconds = %v in a %.1f s run, want between 0 and %.1f", status, sum.ThrottledSeconds, sum.ElapsedSeconds, limit)
		}
		for _, s := range append(sum.PerHost, sum.PerExit...) {
			if s.ThrottledSeconds < 0 || s.ThrottledSeconds > 2*sum.ElapsedSeconds+0.1 {
				t.Errorf("status %d: %s throttled_seconds = %v in a %.1f s run", status, s.Name, s.ThrottledSeconds, sum.ElapsedSeconds)
			}
		}
	}
}

// TestCapacitiesCountTimeSpent: the part of a cooldown or pause still ahead
// at the snapshot is not counted as throttled time.
func TestCapacitiesCountTimeSpent(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := limit.Snapshot{At: at, Hosts: []limit.HostSnapshot{{
		Host:        "a.example",
		PausedUntil: at.Add(time.Hour), // imposed 10 s ago: 10 s spent
		Counters:    limit.Counters{ThrottledNs: int64((time.Hour + 10*time.Second) + (5*time.Second + 2*time.Second))},
		Lanes: []limit.LaneSnapshot{
			{Exit: "e1", ThrottledSeconds: 5},                                     // over
			{Exit: "e2", ThrottledSeconds: 2, CooldownUntil: at.Add(time.Second)}, // 1 s spent, 1 s ahead
		},
	}}}
	hosts, exits := capacities(s)
	if got := hosts["a.example"].Throttled; got != 10+5+1 {
		t.Errorf("host throttled = %v s, want 16 (10 of the pause, 5 and 1 of the cooldowns)", got)
	}
	// The pause held both lanes: each exit is charged half of its 10 s, so
	// the exits add up to the host (they read 0 s at 100% 429s).
	if exits["e1"].Throttled != 5+5 || exits["e2"].Throttled != 1+5 {
		t.Errorf("exits throttled = %v, %v s; want 10 and 6", exits["e1"].Throttled, exits["e2"].Throttled)
	}
	// A host limited site-wide: its exits share its rate; the lanes' own
	// rates sit unused at the ceiling (each exit read 50/s a host).
	s.Hosts[0].Rate = limit.PerSecond(2)
	s.Hosts[0].Counters.OK, s.Hosts[0].Counters.Busy = 40, 3
	s.Hosts[0].Lanes[0].Rate, s.Hosts[0].Lanes[1].Rate = limit.PerSecond(50), limit.PerSecond(50)
	hosts, exits = capacities(s)
	if hosts["a.example"].PerSecond != 2 || exits["e1"].PerSecond != 1 || exits["e2"].PerSecond != 1 {
		t.Errorf("learned: host %v/s, exits %v/s and %v/s; want 2, 1 and 1", hosts["a.example"].PerSecond, exits["e1"].PerSecond, exits["e2"].PerSecond)
	}
	// A host that answered nothing learned nothing: its lanes' first
	// guesses are no capacity (an exit over 8,000 hosts that refused
	// every connection read 776,194/s learned).
	s.Hosts = append(s.Hosts, limit.HostSnapshot{Host: "down.example", Counters: limit.Counters{Requests: 19, Errors: 19},
		Lanes: []limit.LaneSnapshot{{Exit: "e1", Rate: limit.PerSecond(2.74)}}})
	hosts, exits = capacities(s)
	if hosts["down.example"].PerSecond != 0 || exits["e1"].PerSecond != 1 {
		t.Errorf("a host that never answered: host %v/s learned, e1 %v/s; want 0 and e1's 1 of a.example", hosts["down.example"].PerSecond, exits["e1"].PerSecond)
	}
}
