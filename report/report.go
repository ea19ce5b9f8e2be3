// Package report writes the end-of-run outputs of a crawl: results.jsonl
// (one line per finished URL, rebuilt from the frontier so that it holds each
// URL exactly once even after a kill and a resume) and summary.json (what
// the run achieved: 429 ratio, time throttled, effective rate, abandoned URLs
// and why, per exit and per host).
package report

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/exitgate/exitgate/limit"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/metrics"
)

// Result is one line of results.jsonl.
type Result struct {
	URL       string `json:"url"`
	Outcome   string `json:"outcome"` // "done" or "abandoned"
	Status    int    `json:"status"`
	Reason    string `json:"reason,omitempty"`
	Attempts  int    `json:"attempts"`
	Exit      string `json:"exit,omitempty"` // an exit id, never credentials
	Bytes     int64  `json:"bytes"`
	ElapsedMS int64  `json:"elapsed_ms"`
	Body      string `json:"body,omitempty"` // path under the output dir
}

// WriteResults rewrites dir/results.jsonl from every finished job in fr, in
// job order, atomically (a temporary file renamed into place). Body paths
// are made relative to dir.
func WriteResults(ctx context.Context, fr frontier.Frontier, dir string) (int, error) {
	tmp, err := os.CreateTemp(dir, ".results-*.jsonl")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 64<<10)
	n, err := writeResults(ctx, fr, dir, w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("write results: %w", err)
	}
	return n, os.Rename(tmp.Name(), filepath.Join(dir, "results.jsonl"))
}

func writeResults(ctx context.Context, fr frontier.Frontier, dir string, w io.Writer) (int, error) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	var after int64
	n := 0
	for {
		jobs, err := fr.Finished(ctx, after, 1000)
		if err != nil {
			return n, err
		}
		if len(jobs) == 0 {
			return n, nil
		}
		for _, j := range jobs {
			if err := enc.Encode(ResultOf(j, dir)); err != nil {
				return n, err
			}
			n++
			after = j.ID
		}
	}
}

// ResultOf describes a finished job as a results.jsonl line.
func ResultOf(j frontier.Job, dir string) Result {
	r := Result{URL: j.URL, Outcome: j.State.String(), Status: j.Status, Attempts: j.Attempts}
	if j.State == frontier.Done {
		r.Status = j.Result.Status
		r.Exit = j.Result.Exit
		r.Bytes = j.Result.Bytes
		r.ElapsedMS = j.Result.Elapsed.Milliseconds()
		r.Body = j.Result.Body
		if rel, err := filepath.Rel(dir, r.Body); err == nil && r.Body != "" {
			r.Body = rel
		}
	} else {
		r.Reason = j.Reason
	}
	return r
}

// Capacity is what the limiter learned about one host or exit, for the
// summary's per-host and per-exit lists.
type Capacity struct {
	// PerSecond is the learned rate: for a host, its current rate; for an
	// exit, the sum of its lanes' learned capacities.
	PerSecond float64 `json:"learned_per_second"`
	Scope     string  `json:"scope,omitempty"` // hosts: per-exit, host-wide, ...
	// Phase is how far the host's learning got (ramp, refine, bisect,
	// settled, declared, shared); Changes its last learning decisions,
	// oldest first, so that a reader can see why a host slowed down.
	Phase   string         `json:"phase,omitempty"`
	Changes []limit.Change `json:"changes,omitempty"`
	// Throttled is the time the server's pushback cost, in seconds: the
	// cooldowns 429s imposed on lanes plus, for a host, its host-wide
	// pauses (503 Retry-After, a host-scoped 429). Reported as the scope's
	// throttled_seconds.
	Throttled float64 `json:"-"`
}

// Scoped is one entry of per_host or per_exit.
type Scoped struct {
	Name              string           `json:"name"`
	Requests          int64            `json:"requests"`
	Successes         int64            `json:"successes"` // ok verdicts, robots.txt and redirect hops included
	Done              int64            `json:"done"`
	Retries           int64            `json:"retries"`
	ResponsesByStatus map[string]int64 `json:"responses_by_status"`
	Ratio429          float64          `json:"ratio_429"`
	ThrottledSeconds  float64          `json:"throttled_seconds"`
	HeldBackSeconds   float64          `json:"held_back_seconds,omitempty"`
	EffectiveRate     float64          `json:"effective_rate"`
	Abandoned         int64            `json:"abandoned"`
	TransportErrors   int64            `json:"transport_errors"`
	MeanLatencyMS     float64          `json:"mean_latency_ms"`
	Capacity
}

// Summary is summary.json. URL counts cover the whole frontier (earlier runs
// included); request counters and rates cover this run.
type Summary struct {
	URLs              int              `json:"urls"`
	Done              int              `json:"done"`
	Abandoned         int              `json:"abandoned"`
	AbandonedByReason map[string]int   `json:"abandoned_by_reason"`
	Parked            int              `json:"parked"`
	Queued            int              `json:"queued"`
	Requests          int64            `json:"requests"`
	ResponsesByStatus map[string]int64 `json:"responses_by_status"`
	TransportErrors   int64            `json:"transport_errors"`
	Ratio429          float64          `json:"ratio_429"`
	RetriesPerSuccess float64          `json:"retries_per_success"`
	ThrottledSeconds  float64          `json:"throttled_seconds"`
	HeldBackSeconds   float64          `json:"held_back_seconds"`
	EffectiveRate     float64          `json:"effective_rate"`
	ElapsedSeconds    float64          `json:"elapsed_seconds"`
	PerExit           []Scoped         `json:"per_exit"`
	PerHost           []Scoped         `json:"per_host"`
}

// Summarize combines the frontier's counts, the run's tally and what the
// limiter learned (capacities by host and by exit name; either may be nil).
func Summarize(c frontier.Counts, s metrics.Snapshot, hosts, exits map[string]Capacity) Summary {
	sum := Summary{
		URLs: c.Total(), Done: c.Done, Abandoned: c.Abandoned,
		AbandonedByReason: c.AbandonedByReason,
		Parked:            c.Parked, Queued: c.Queued + c.Leased,
		Requests:          s.Total.Requests,
		ResponsesByStatus: statusKeys(s.Total.ByStatus),
		TransportErrors:   s.Total.TransportErrors,
		Ratio429:          s.Total.Ratio429(),
		HeldBackSeconds:   s.Total.HeldBackSeconds,
		EffectiveRate:     s.EffectiveRate(),
		ElapsedSeconds:    s.Elapsed().Seconds(),
	}
	if sum.AbandonedByReason == nil {
		sum.AbandonedByReason = map[string]int{}
	}
	sum.RetriesPerSuccess = s.Total.RetriesPerSuccess()
	elapsed := s.Elapsed().Seconds()
	sum.PerHost = scoped(s.Hosts, hosts, elapsed)
	sum.PerExit = scoped(s.Exits, exits, elapsed)
	for _, c := range hosts {
		sum.ThrottledSeconds += c.Throttled
	}
	return sum
}

func scoped(list []metrics.Scoped, caps map[string]Capacity, elapsed float64) []Scoped {
	out := make([]Scoped, 0, len(list))
	seen := map[string]bool{}
	for _, x := range list {
		seen[x.Name] = true
		var abandoned int64
		for _, n := range x.Abandoned {
			abandoned += n
		}
		sc := Scoped{
			Name: x.Name, Requests: x.Requests, Successes: x.Successes, Done: x.Done, Retries: x.Retries,
			ResponsesByStatus: statusKeys(x.ByStatus), Ratio429: x.Ratio429(),
			ThrottledSeconds: caps[x.Name].Throttled, HeldBackSeconds: x.HeldBackSeconds,
			Abandoned:       abandoned,
			TransportErrors: x.TransportErrors,
			MeanLatencyMS:   float64(x.MeanLatency().Microseconds()) / 1000,
			Capacity:        caps[x.Name],
		}
		if elapsed > 0 {
			sc.EffectiveRate = float64(x.Done) / elapsed
		}
		out = append(out, sc)
	}
	for name, c := range caps { // exits the run never used still show
		if !seen[name] {
			out = append(out, Scoped{Name: name, ResponsesByStatus: map[string]int64{}, ThrottledSeconds: c.Throttled, Capacity: c})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// statusKeys turns status codes into JSON object keys.
func statusKeys(m map[int]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[strconv.Itoa(k)] = v
	}
	return out
}

// WriteSummary writes dir/summary.json.
func WriteSummary(dir string, s Summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "summary.json"), append(b, '\n'), 0o644)
}
