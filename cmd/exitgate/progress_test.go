package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestETAFromRecentRate: the ETA follows the rate of the last minute, not
// the average since the start. The case: lanes learning for the
// first minutes at 1 URL/s, then 10 URLs/s: the average since start would
// say three times too long.
func TestETAFromRecentRate(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	type reading struct {
		sec, n int
	}
	ramp := func() []reading {
		var rs []reading
		n := 0
		for s := 0; s <= 240; s++ { // 1/s for 3 minutes, then 10/s
			rs = append(rs, reading{s, n})
			if s < 180 {
				n++
			} else {
				n += 10
			}
		}
		return rs
	}()
	for _, tt := range []struct {
		name     string
		readings []reading
		left     int
		want     time.Duration
		ok       bool
	}{
		{"no reading", nil, 10, 0, false},
		{"one reading", []reading{{0, 0}}, 10, 0, false},
		{"under a second of history", []reading{{0, 0}, {0, 5}}, 10, 0, false},
		{"steady 2/s", []reading{{0, 0}, {5, 10}, {10, 20}}, 100, 50 * time.Second, true},
		{"nothing left", []reading{{0, 0}}, 0, 0, true},
		{"stalled for the whole window", []reading{{0, 0}, {10, 50}, {80, 50}, {140, 50}}, 10, 0, false},
		{"after a slow start: the last minute's 10/s", ramp, 1890, 189 * time.Second, true},
		{"a resumed crawl starts from its count", []reading{{0, 5000}, {10, 5020}}, 200, 100 * time.Second, true},
	} {
		w := rateWindow{span: time.Minute}
		for _, r := range tt.readings {
			w.add(t0.Add(time.Duration(r.sec)*time.Second), r.n)
		}
		got, ok := w.eta(tt.left)
		if ok != tt.ok || got != tt.want {
			t.Errorf("%s: eta(%d) = %v, %v; want %v, %v", tt.name, tt.left, got, ok, tt.want, tt.ok)
		}
	}
	// The window keeps only what it needs: a minute of one-second readings.
	w := rateWindow{span: time.Minute}
	for s := range 3600 {
		w.add(t0.Add(time.Duration(s)*time.Second), s)
	}
	if n := len(w.samples); n > 62 {
		t.Errorf("after an hour of readings the window holds %d, want about 61", n)
	}
}

func TestFmtETA(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		ok   bool
		want string
	}{
		{0, false, "?"},
		{0, true, "0s"},
		{189*time.Second + 400*time.Millisecond, true, "3m9s"},
		{2*time.Hour + 14*time.Minute + 40*time.Second, true, "2h15m"},
		{30 * time.Minute, true, "30m"},
	} {
		if got := fmtETA(tt.d, tt.ok); got != tt.want {
			t.Errorf("fmtETA(%v, %v) = %q, want %q", tt.d, tt.ok, got, tt.want)
		}
	}
}

// TestProgressLinesWhenNotATerminal: with stderr not a terminal (a pipe or
// file), the crawl writes a progress line every --progress: finished of
// total with the percentage, elapsed time and an ETA, and no bar or
// terminal escapes.
func TestProgressLinesWhenNotATerminal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	urls := siteURLs(srv.URL, 60)
	// 60 URLs at 20/s take about 3 s: several lines at 200ms, those after
	// the first second with an ETA.
	_, crawl := crawlList(t, dir, urls, "--ignore-robots", "--lane-rate", "20/s", "--host-rate", "20/s", "--progress", "200ms")
	r := crawl()
	if r.err != nil {
		t.Fatalf("crawl: %v\nstderr:\n%s", r.err, r.stderr)
	}
	re := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d finished (\d+)/60 \((\d+)%\)  abandoned 0  queued \d+  parked 0  \|  [\d.]+ ok/s  429 [\d.]+% \(last min [\d.]+%\)  \|  elapsed \d+(\.\d+)?m?s  ETA (\?|[\dhms.]+)$`)
	lines := re.FindAllStringSubmatch(r.stderr, -1)
	if len(lines) < 3 {
		t.Fatalf("%d progress lines, want 3 or more; stderr:\n%s", len(lines), r.stderr)
	}
	prev, withETA := -1, 0
	for _, m := range lines {
		n, _ := strconv.Atoi(m[1])
		pct, _ := strconv.Atoi(m[2])
		if n < prev || pct != n*100/60 {
			t.Errorf("line %q: %d done at %d%%, after %d", m[0], n, pct, prev)
		}
		prev = n
		if m[4] != "?" {
			withETA++
		}
	}
	if withETA == 0 {
		t.Errorf("no line has an ETA:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, "\033[") || strings.Contains(r.stderr, "\r") {
		t.Errorf("terminal control sequences on a stderr that is not a terminal:\n%q", r.stderr)
	}
}
