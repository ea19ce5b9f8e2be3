package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// RunsDir is where WriteSummary keeps one summary per run, under the output
// directory.
const RunsDir = "runs"

// WriteSummary records one run: dir/runs/<start>.json holds run alone, and
// dir/summary.json is rewritten as the Cumulative of every run recorded
// there. Both are written atomically, so that a full disk or a crash leaves
// the previous files whole, and a rerun of a finished crawl adds an empty
// run instead of replacing the summary of the one that did the work. It
// returns the cumulative summary. A run file that cannot be read is left
// out of it, and named in the error after everything else was written.
func WriteSummary(dir string, run Summary) (Summary, error) {
	path, err := RunPath(dir, run)
	if err != nil {
		return Summary{}, err
	}
	return WriteSummaryAt(dir, path, run)
}

// RunPath reserves the file under dir/runs that run, by its start, is
// recorded in: a run that checkpoints its summary as it goes (CheckpointRun)
// writes the same file each time, and WriteSummaryAt there at its end.
func RunPath(dir string, run Summary) (string, error) {
	runs := filepath.Join(dir, RunsDir)
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return "", err
	}
	return runFile(runs, run), nil
}

// CheckpointRun writes run, a run still going, to its file (RunPath): a
// run killed (kill -9) before its end leaves its counts up to the last
// checkpoint, which the next run's summary.json adds up with the others.
func CheckpointRun(path string, run Summary) error { return WriteJSON(path, run) }

// WriteSummaryAt is WriteSummary with the run's file reserved before
// (RunPath).
func WriteSummaryAt(dir, path string, run Summary) (Summary, error) {
	runs := filepath.Join(dir, RunsDir)
	if err := WriteJSON(path, run); err != nil {
		return Summary{}, err
	}
	all, bad := readRuns(runs)
	cum := Cumulative(all)
	if err := WriteJSON(filepath.Join(dir, "summary.json"), cum); err != nil {
		return Summary{}, err
	}
	return cum, bad
}

// ReadSummary adds up the runs recorded under dir (dir/runs), the last one's
// checkpoint included: what summary.json would say now, for a crawl killed
// before it wrote it, or one still running. A run file that cannot be read
// is left out and named in the error.
func ReadSummary(dir string) (Summary, error) {
	all, bad := readRuns(filepath.Join(dir, RunsDir))
	if len(all) == 0 {
		if bad == nil {
			bad = fmt.Errorf("%s: no run recorded (%s is empty or missing)", dir, RunsDir)
		}
		return Summary{}, bad
	}
	return Cumulative(all), bad
}

// runFile names a run's file by its start, to the millisecond, in UTC; a
// second run started in the same millisecond gets a suffix.
func runFile(runs string, s Summary) string {
	base := s.Started.UTC().Format("20060102T150405.000Z")
	name := filepath.Join(runs, base+".json")
	for i := 2; ; i++ {
		if _, err := os.Lstat(name); errors.Is(err, os.ErrNotExist) {
			return name
		}
		name = filepath.Join(runs, fmt.Sprintf("%s-%d.json", base, i))
	}
}

// readRuns reads every run summary in runs, oldest first.
func readRuns(runs string) ([]Summary, error) {
	names, err := filepath.Glob(filepath.Join(runs, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []Summary
	var bad []error
	for _, n := range names {
		b, err := os.ReadFile(n)
		var s Summary
		if err == nil {
			err = json.Unmarshal(b, &s)
		}
		if err != nil {
			bad = append(bad, fmt.Errorf("run summary %s left out of summary.json: %w", n, err))
			continue
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, errors.Join(bad...)
}

// WriteJSON writes v as indented JSON to path, atomically (see writeAtomic).
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// writeAtomic writes path through a temporary file in the same directory,
// synced and renamed into place, then syncs the directory: readers see the
// old file or the new one, never a part, even after a crash or a full disk.
func writeAtomic(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is none
	err = write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		return err
	}
	return nil
}

// Cumulative adds up runs (oldest first) into one summary of the crawl: URL
// counts as the last run left the frontier; requests, statuses, errors,
// retries, fetched URLs and time summed over the runs, and the ratios and
// rates computed from the sums; per exit and per host the same, with what
// the limiter learned taken from the last run that used the scope.
func Cumulative(runs []Summary) Summary {
	if len(runs) == 0 {
		return Summary{AbandonedByReason: map[string]int{}, ResponsesByStatus: map[string]int64{}, PerExit: []Scoped{}, PerHost: []Scoped{}}
	}
	last := runs[len(runs)-1]
	c := Summary{
		Started: runs[0].Started,
		URLs:    last.URLs, Done: last.Done, NotFound: last.NotFound, Abandoned: last.Abandoned,
		AbandonedByReason: last.AbandonedByReason,
		Parked:            last.Parked, Queued: last.Queued,
		ResponsesByStatus: map[string]int64{},
	}
	exits, hosts := map[string]*Scoped{}, map[string]*Scoped{}
	for _, r := range runs {
		c.Runs += max(r.Runs, 1)
		c.Requests += r.Requests
		c.TransportErrors += r.TransportErrors
		c.Aborted += r.Aborted
		c.Fetched += r.Fetched
		c.Truncated += r.Truncated
		c.Retries += r.Retries
		c.ThrottledSeconds += r.ThrottledSeconds
		c.HeldBackSeconds += r.HeldBackSeconds
		c.ElapsedSeconds += r.ElapsedSeconds
		addStatuses(c.ResponsesByStatus, r.ResponsesByStatus)
		addScoped(exits, r.PerExit)
		addScoped(hosts, r.PerHost)
		c.Events = append(c.Events, r.Events...)
	}
	c.Events = c.Events[max(len(c.Events)-MaxEvents, 0):]
	c.Ratio429 = ratio(c.ResponsesByStatus["429"], c.Requests)
	c.RetriesPerSuccess = ratio(c.Retries, c.Fetched)
	if c.ElapsedSeconds > 0 {
		c.EffectiveRate = float64(c.Fetched) / c.ElapsedSeconds
	}
	c.PerExit = sortedScoped(exits, c.ElapsedSeconds)
	c.PerHost = sortedScoped(hosts, c.ElapsedSeconds)
	return c
}

func addStatuses(to, from map[string]int64) {
	for k, n := range from {
		to[k] += n
	}
}

func addScoped(to map[string]*Scoped, list []Scoped) {
	for _, x := range list {
		s := to[x.Name]
		if s == nil {
			s = &Scoped{Name: x.Name, ResponsesByStatus: map[string]int64{}}
			to[x.Name] = s
		}
		// Mean latencies add up weighted by their requests.
		s.MeanLatencyMS = (s.MeanLatencyMS*float64(s.Requests) + x.MeanLatencyMS*float64(x.Requests)) / float64(max(s.Requests+x.Requests, 1))
		s.Requests += x.Requests
		s.Successes += x.Successes
		s.Done += x.Done
		s.Retries += x.Retries
		s.ThrottledSeconds += x.ThrottledSeconds
		s.HeldBackSeconds += x.HeldBackSeconds
		s.Abandoned += x.Abandoned
		s.TransportErrors += x.TransportErrors
		s.Aborted += x.Aborted
		addStatuses(s.ResponsesByStatus, x.ResponsesByStatus)
		if x.Requests > 0 || s.Capacity.zero() {
			s.Capacity = x.Capacity
		}
	}
}

func sortedScoped(m map[string]*Scoped, elapsed float64) []Scoped {
	out := make([]Scoped, 0, len(m))
	for _, s := range m {
		s.Ratio429 = ratio(s.ResponsesByStatus["429"], s.Requests)
		if elapsed > 0 {
			s.EffectiveRate = float64(s.Done) / elapsed
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func ratio(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}
