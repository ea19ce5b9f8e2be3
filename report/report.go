// Package report writes the outputs of a crawl: results.jsonl or
// results.csv (one row per finished URL, written as URLs finish and
// reconciled with the frontier so that it holds each URL exactly once even
// after a kill and a resume; see Results), and summary.json (what the runs
// achieved: 429 ratio, time throttled, effective rate, abandoned URLs and
// why, per exit and per host; see WriteSummary).
package report

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/exitgate/exitgate/limit"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/monitor"
	"github.com/exitgate/exitgate/verdict"
)

// Result is one line of results.jsonl (or one row of results.csv).
type Result struct {
	ID        int64  `json:"id"` // the job's id in the frontier
	URL       string `json:"url"`
	Outcome   string `json:"outcome"` // "done", "not_found" (404, 410) or "abandoned"
	Status    int    `json:"status"`
	Reason    string `json:"reason,omitempty"`
	Attempts  int    `json:"attempts"`
	Exit      string `json:"exit,omitempty"` // an exit id, never credentials
	Bytes     int64  `json:"bytes"`
	ElapsedMS int64  `json:"elapsed_ms"`
	Body      string `json:"body,omitempty"` // path under the output dir
	// Truncated: the body was longer than --max-body; Bytes were kept.
	Truncated bool `json:"truncated,omitempty"`
	// What the answer that finished the URL said (see AddResponse); empty in
	// a row rebuilt from the frontier, which does not keep it.
	FinalURL     string    `json:"final_url,omitempty"` // where redirects led
	ContentType  string    `json:"content_type,omitempty"`
	FetchedAt    time.Time `json:"fetched_at,omitzero"`
	ETag         string    `json:"etag,omitempty"`
	LastModified string    `json:"last_modified,omitempty"`
	// ContentEncoding is the body's encoding as stored, when it is not
	// decoded: a request header Accept-Encoding (-H) asks for the body
	// as the server sends it, gzip and all, as curl without --compressed.
	ContentEncoding string `json:"content_encoding,omitempty"`
}

// ResultOf describes a finished job as a results.jsonl line.
func ResultOf(j frontier.Job, dir string) Result {
	// (A password in the URL's userinfo is not written out.)
	r := Result{ID: j.ID, URL: urlText(frontier.Redact(j.URL)), Outcome: j.State.String(), Status: j.Status, Attempts: j.Attempts}
	if j.State == frontier.Done {
		r.Status = j.Result.Status
		r.Exit = j.Result.Exit
		r.Bytes = j.Result.Bytes
		r.ElapsedMS = j.Result.Elapsed.Milliseconds()
		r.Body = BodyPath(dir, j.Result.Body)
		r.Truncated = j.Result.Truncated
	} else {
		r.Reason = j.Reason
		if notFound(j.Status) && j.Reason == fmt.Sprintf("status %d", j.Status) {
			r.Outcome = NotFound
		}
	}
	return r
}

// BodyPath is the results row's path of a stored body, relative to the
// output directory dir when the body is in it: bodies/17. A path the
// frontier recorded elsewhere (the directory moved since, or an older
// exitgate recorded it relative to its working directory) whose file is in
// dir's bodies/ under the same name is that file; another path (another
// worker's --out) is given relative to dir when it can be, else as it was.
func BodyPath(dir, body string) string {
	if body == "" {
		return ""
	}
	rel, ok := relPath(dir, body)
	if ok && filepath.IsLocal(rel) {
		return rel
	}
	own := filepath.Join(BodiesDir, filepath.Base(body))
	if filepath.Base(filepath.Dir(body)) == BodiesDir {
		if _, err := os.Stat(filepath.Join(dir, own)); err == nil {
			return own
		}
	}
	if ok {
		return rel
	}
	return body
}

// relPath is path relative to dir, both made absolute first; ok is false
// when it cannot be.
func relPath(dir, path string) (string, bool) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(absDir, abs)
	return rel, err == nil
}

// BodiesDir is the directory, in the output directory, that holds the
// bodies.
const BodiesDir = "bodies"

// NotFound is the outcome of a URL the server said does not exist (404,
// 410): an answer about the URL, kept apart from the URLs given up on.
const NotFound = "not_found"

func notFound(status int) bool { return status == 404 || status == 410 }

// notFoundReason reports whether an abandon reason is a URL the server says
// is not there (404, 410).
func notFoundReason(reason string) bool { return verdict.NotFoundReason(reason) }

// CountNotFound returns how many of the abandoned URLs, by reason, were
// not found (404 or 410): not abandoned, in every figure a user sees.
func CountNotFound(byReason map[string]int) int {
	n, _ := splitNotFound(byReason)
	return n
}

// SplitNotFound takes the not-found URLs out of the abandoned ones: it
// returns how many there are, and the other reasons.
func SplitNotFound(byReason map[string]int) (int, map[string]int) { return splitNotFound(byReason) }

func splitNotFound(byReason map[string]int) (int, map[string]int) {
	n := 0
	rest := make(map[string]int, len(byReason))
	for r, k := range byReason {
		if notFoundReason(r) {
			n += k
			continue
		}
		rest[r] = k
	}
	return n, rest
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
	// Failing (exits) says that the exit's latest requests failed as a
	// proxy when the run ended, and how: its learned rate is the server's
	// budget for its IP, not something it delivers.
	Failing string `json:"failing,omitempty"`
}

// zero reports whether c holds nothing.
func (c Capacity) zero() bool {
	return c.PerSecond == 0 && c.Scope == "" && c.Throttled == 0 && c.Phase == "" && len(c.Changes) == 0 && c.Failing == ""
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
	Aborted           int64            `json:"aborted,omitempty"`
	MeanLatencyMS     float64          `json:"mean_latency_ms"`
	Capacity
}

// Summary is what a run did (runs/<start>.json), or what all runs of a crawl
// did together (summary.json, see Cumulative). URL counts cover the whole
// frontier as the run left it; request counters and rates cover the run, or
// the runs.
type Summary struct {
	// Runs is how many runs this covers (1 for one run); Started is when
	// the (first) run started.
	Runs    int       `json:"runs"`
	Started time.Time `json:"started"`
	URLs    int       `json:"urls"`
	Done    int       `json:"done"`
	// NotFound counts URLs answered 404 or 410, which are not in Abandoned.
	NotFound          int              `json:"not_found"`
	Abandoned         int              `json:"abandoned"`
	AbandonedByReason map[string]int   `json:"abandoned_by_reason"`
	Parked            int              `json:"parked"`
	Queued            int              `json:"queued"`
	Requests          int64            `json:"requests"`
	ResponsesByStatus map[string]int64 `json:"responses_by_status"`
	TransportErrors   int64            `json:"transport_errors"`
	// Aborted is the requests sent that the crawl's own stop cut short (a
	// second signal, --duration's drain): in Requests, with no answer. A
	// server's log counts them; they were in no count at all.
	Aborted int64 `json:"aborted,omitempty"`
	// Fetched is the URLs the run (or runs) finished done; Retries the
	// requests they sent again for a URL.
	Fetched int64 `json:"fetched"`
	// Truncated is the URLs of Fetched whose body was cut at --max-body
	// (each one's row in results.jsonl says so too).
	Truncated         int64    `json:"truncated"`
	Retries           int64    `json:"retries"`
	Ratio429          float64  `json:"ratio_429"`
	RetriesPerSuccess float64  `json:"retries_per_success"`
	ThrottledSeconds  float64  `json:"throttled_seconds"`
	HeldBackSeconds   float64  `json:"held_back_seconds"`
	EffectiveRate     float64  `json:"effective_rate"`
	ElapsedSeconds    float64  `json:"elapsed_seconds"`
	PerExit           []Scoped `json:"per_exit"`
	PerHost           []Scoped `json:"per_host"`
	// Events are the monitor's: alerts (a host over its 429 budget), circuit
	// breakers opening and closing, spikes, early warnings and exit
	// reputation, oldest first (the last MaxEvents over all runs).
	Events []monitor.Event `json:"events,omitempty"`
}

// MaxEvents bounds the events summary.json keeps over all runs.
const MaxEvents = 500

// Summarize combines the frontier's counts, the run's tally and what the
// limiter learned (capacities by host and by exit name; either may be nil).
func Summarize(c frontier.Counts, s metrics.Snapshot, hosts, exits map[string]Capacity) Summary {
	sum := Summary{
		Runs: 1, Started: s.Start,
		Fetched: s.Total.Done, Truncated: s.Total.Truncated, Retries: s.Total.Retries,
		URLs: c.Total(), Done: c.Done, Abandoned: c.Abandoned,
		AbandonedByReason: c.AbandonedByReason,
		Parked:            c.Parked, Queued: c.Queued + c.Leased,
		Requests:          s.Total.Requests,
		ResponsesByStatus: statusKeys(s.Total.ByStatus),
		TransportErrors:   s.Total.TransportErrors,
		Aborted:           s.Total.Aborted,
		Ratio429:          s.Total.Ratio429(),
		HeldBackSeconds:   s.Total.HeldBackSeconds,
		EffectiveRate:     s.EffectiveRate(),
		ElapsedSeconds:    s.Elapsed().Seconds(),
	}
	sum.NotFound, sum.AbandonedByReason = splitNotFound(c.AbandonedByReason)
	sum.Abandoned -= sum.NotFound
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
		for r, n := range x.Abandoned {
			if !notFoundReason(r) { // counted apart, as in the totals
				abandoned += n
			}
		}
		sc := Scoped{
			Name: x.Name, Requests: x.Requests, Successes: x.Successes, Done: x.Done, Retries: x.Retries,
			ResponsesByStatus: statusKeys(x.ByStatus), Ratio429: x.Ratio429(),
			ThrottledSeconds: caps[x.Name].Throttled, HeldBackSeconds: x.HeldBackSeconds,
			Abandoned:       abandoned,
			TransportErrors: x.TransportErrors,
			Aborted:         x.Aborted,
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
