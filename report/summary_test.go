package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// runOf is a run summary with the counters Cumulative adds up.
func runOf(start time.Time, requests, n429, fetched, retries int64, elapsed float64, done, queued int) Summary {
	return Summary{
		Runs: 1, Started: start, URLs: done + queued, Done: done, Queued: queued,
		AbandonedByReason: map[string]int{},
		Requests:          requests, Fetched: fetched, Retries: retries, ElapsedSeconds: elapsed,
		ResponsesByStatus: map[string]int64{"200": requests - n429, "429": n429},
		ThrottledSeconds:  float64(n429),
		PerHost: []Scoped{{Name: "a", Requests: requests, Done: fetched, MeanLatencyMS: 10,
			ResponsesByStatus: map[string]int64{"200": requests - n429, "429": n429}, Capacity: Capacity{PerSecond: float64(requests)}}},
		PerExit: []Scoped{},
	}
}

func TestCumulative(t *testing.T) {
	first := runOf(t0, 100, 4, 90, 6, 10, 90, 10)
	second := runOf(t0.Add(time.Hour), 20, 1, 10, 2, 10, 100, 0)
	rerun := runOf(t0.Add(2*time.Hour), 0, 0, 0, 0, 0.01, 100, 0) // a finished crawl run again
	rerun.PerHost = []Scoped{}
	c := Cumulative([]Summary{first, second, rerun})
	if c.Runs != 3 || !c.Started.Equal(t0) || c.Requests != 120 || c.Fetched != 100 || c.Retries != 8 ||
		c.ResponsesByStatus["429"] != 5 || c.ResponsesByStatus["200"] != 115 || c.ThrottledSeconds != 5 {
		t.Errorf("Cumulative = %+v, want 3 runs from t0, 120 requests, 100 fetched, 8 retries, 5 429s, 115 200s, 5 s throttled", c)
	}
	if c.Done != 100 || c.Queued != 0 || c.URLs != 100 {
		t.Errorf("Cumulative URL counts = %d done %d queued of %d, want the last run's 100 done", c.Done, c.Queued, c.URLs)
	}
	if want := 5.0 / 120; c.Ratio429 != want || c.RetriesPerSuccess != 0.08 || c.EffectiveRate != 100/20.01 {
		t.Errorf("Cumulative ratios: 429 %v, retries per success %v, rate %v; want %v, 0.08, %v", c.Ratio429, c.RetriesPerSuccess, c.EffectiveRate, want, 100/20.01)
	}
	if len(c.PerHost) != 1 || c.PerHost[0].Requests != 120 || c.PerHost[0].Done != 100 || c.PerHost[0].PerSecond != 20 || c.PerHost[0].MeanLatencyMS != 10 {
		t.Errorf("Cumulative per_host = %+v, want a: 120 requests, 100 done, learned 20/s (the last run that used it), 10 ms", c.PerHost)
	}
	if e := Cumulative(nil); e.Runs != 0 || e.ResponsesByStatus == nil || e.PerHost == nil {
		t.Errorf("Cumulative(nil) = %+v, want zero with empty maps and lists", e)
	}
}

// TestWriteSummaryKeepsEveryRun: each run gets its own file under runs/, and
// summary.json adds them up, so that running a finished crawl again (a run
// with no requests) no longer replaces the summary of the run that did the
// work.
func TestWriteSummaryKeepsEveryRun(t *testing.T) {
	dir := t.TempDir()
	first := runOf(t0, 100, 4, 90, 6, 10, 90, 10)
	rerun := runOf(t0, 0, 0, 0, 0, 0.01, 90, 10) // same millisecond: a second file all the same
	for _, r := range []Summary{first, rerun} {
		if _, err := WriteSummary(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, RunsDir, "*.json"))
	if len(files) != 2 {
		t.Errorf("runs/ holds %v, want two run files", files)
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Runs != 2 || s.Requests != 100 || s.Fetched != 90 {
		t.Errorf("summary.json after a rerun: %d runs, %d requests, %d fetched; want 2 runs, the first run's 100 requests and 90 fetched", s.Runs, s.Requests, s.Fetched)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}
