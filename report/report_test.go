package report

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/memory"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/verdict"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestResultsOneLinePerFinishedJob(t *testing.T) {
	ctx := context.Background()
	fr, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fr.Push(ctx, []frontier.NewJob{{URL: "http://a.example/1"}, {URL: "http://a.example/2"}, {URL: "http://a.example/3"}})
	jobs, err := fr.Claim(ctx, t0, 3, nil)
	if err != nil || len(jobs) != 3 {
		t.Fatalf("Claim = %d jobs, %v", len(jobs), err)
	}
	body := filepath.Join(dir, "bodies", "1")
	if err := fr.Complete(ctx, jobs[0].Lease(), frontier.Result{Status: 200, Bytes: 5, Exit: "e1", Elapsed: 1500 * time.Millisecond, Body: body}); err != nil {
		t.Fatal(err)
	}
	if err := fr.Abandon(ctx, jobs[1].Lease(), 404, "status 404"); err != nil {
		t.Fatal(err)
	}
	// jobs[2] stays leased: unfinished, so not in the results.
	res, err := OpenResults(ctx, fr, dir, JSONL)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Close(ctx, fr); err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{ID: 1, URL: "http://a.example/1", Outcome: "done", Status: 200, Attempts: 1, Exit: "e1", Bytes: 5, ElapsedMS: 1500, Body: "bodies/1"},
		{ID: 2, URL: "http://a.example/2", Outcome: "not_found", Status: 404, Reason: "status 404", Attempts: 1},
	}
	got := readJSONL(t, filepath.Join(dir, "results.jsonl"))
	if len(got) != len(want) {
		t.Fatalf("results = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func readJSONL(t *testing.T, path string) []Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []Result
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, r)
	}
	return got
}

func TestSummarize(t *testing.T) {
	ta := metrics.NewTally(t0)
	for i := range 4 {
		st, v := 200, verdict.OK
		if i == 3 {
			st, v = 429, verdict.Throttled
		}
		ta.Record(metrics.Event{Host: "a", Exit: "e1", Status: st, Verdict: v, At: t0})
	}
	ta.Done("a", "e1")
	ta.Done("a", "e1")
	ta.Retry("a", "")
	ta.HeldBack("a", 1500*time.Millisecond)
	ta.Abandon("a", "e1", "status 404")
	ta.Abandon("a", "e1", "forbidden")
	s := Summarize(frontier.Counts{Done: 2, Abandoned: 2, Queued: 3, Leased: 1, AbandonedByReason: map[string]int{"status 404": 1, "forbidden": 1}},
		ta.Snapshot(t0.Add(2*time.Second)),
		map[string]Capacity{"a": {PerSecond: 2, Scope: "exit", Throttled: 1.25}},
		map[string]Capacity{"e1": {PerSecond: 2, Throttled: 1}, "e2": {PerSecond: 0.5}})
	if s.NotFound != 1 || s.Abandoned != 1 || len(s.AbandonedByReason) != 1 || s.AbandonedByReason["forbidden"] != 1 {
		t.Errorf("Summarize: not found %d, abandoned %d %v; want the 404 as not found apart from the 1 forbidden abandoned", s.NotFound, s.Abandoned, s.AbandonedByReason)
	}
	if s.URLs != 8 || s.Queued != 4 || s.Requests != 4 || s.Ratio429 != 0.25 || s.RetriesPerSuccess != 0.5 || s.EffectiveRate != 1 {
		t.Errorf("Summarize = %+v, want 8 URLs, 4 queued, 4 requests, 429 ratio 0.25, 0.5 retries per success, 1 URL/s", s)
	}
	if len(s.PerExit) != 2 || s.PerExit[1].Name != "e2" || s.PerExit[1].PerSecond != 0.5 {
		t.Errorf("per_exit = %+v, want e1 and the unused e2 with its capacity", s.PerExit)
	}
	// Per host and per exit, abandoned leaves the 404 out, as the totals do.
	if s.PerHost[0].Abandoned != 1 || s.PerExit[0].Abandoned != 1 {
		t.Errorf("abandoned: host a %d, exit e1 %d; want 1 each (the forbidden URL, not the 404)", s.PerHost[0].Abandoned, s.PerExit[0].Abandoned)
	}
	// Throttled is the limiter's pushback time (cooldowns, pauses); held
	// back is the tally's time with due work waiting on the limiter.
	if s.ThrottledSeconds != 1.25 || s.HeldBackSeconds != 1.5 || s.PerHost[0].ThrottledSeconds != 1.25 ||
		s.PerHost[0].HeldBackSeconds != 1.5 || s.PerExit[0].ThrottledSeconds != 1 {
		t.Errorf("throttled %v held back %v, host %+v, exit %+v; want 1.25 and 1.5 for the run and host a, 1 for e1",
			s.ThrottledSeconds, s.HeldBackSeconds, s.PerHost[0], s.PerExit[0])
	}
	var buf bytes.Buffer
	WriteTable(&buf, s)
	for _, want := range []string{"URLs 8: 2 done, 1 not found, 1 abandoned", "forbidden", "HOST", "EXIT", "Throttled 1.2s", "held back by the limiter 1.5s"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
	// Retries and no success: said so, not 0.00 retries per success.
	buf.Reset()
	WriteTable(&buf, Summary{Requests: 3, Retries: 2})
	if !strings.Contains(buf.String(), "2 retries, no success") {
		t.Errorf("table of retries without a success:\n%s", buf.String())
	}
	// Refusals besides 429 are named beside its ratio (mod_evasive's 403s
	// read "429 ratio 0.00%" alone).
	buf.Reset()
	WriteTable(&buf, Summary{Requests: 10, ResponsesByStatus: map[string]int64{"200": 7, "403": 3}})
	if !strings.Contains(buf.String(), "429 ratio 0.00% (and 3 403s),") {
		t.Errorf("table of 403 refusals:\n%s", buf.String())
	}
}

// TestBodyPath: a row names its body under the output directory whatever
// path the frontier recorded: absolute, relative to another working
// directory (an older exitgate), or in a directory since moved; a body in
// another worker's directory is named relative to this one.
func TestBodyPath(t *testing.T) {
	root := t.TempDir()
	out, other := filepath.Join(root, "out"), filepath.Join(root, "w2")
	for _, d := range []string{filepath.Join(out, BodiesDir), filepath.Join(other, BodiesDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(out, BodiesDir, "7"), filepath.Join(other, BodiesDir, "9")} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ name, dir, body, want string }{
		{"absolute, inside", out, filepath.Join(out, BodiesDir, "7"), "bodies/7"},
		{"moved since", out, filepath.Join(root, "gone", BodiesDir, "7"), "bodies/7"},
		{"relative to another working directory", out, "elsewhere/o30/bodies/7", "bodies/7"},
		{"another worker's", out, filepath.Join(other, BodiesDir, "9"), "../w2/bodies/9"},
		{"none", out, "", ""},
	} {
		if got := BodyPath(c.dir, c.body); got != c.want {
			t.Errorf("%s: BodyPath(%q, %q) = %q, want %q", c.name, c.dir, c.body, got, c.want)
		}
	}
}
