package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/exitgate/exitgate/limit"
)

// learnedFile holds, in --out, what the limiter learned about each host, so
// that a resumed crawl starts from it instead of the first guess.
const learnedFile = "learned.json"

// learnedEvery is how often a running crawl saves what it learned and
// checkpoints its run's summary, so that a crawl killed with -9 loses at
// most this much of either. (A variable only for the kill test, which
// cannot wait half a minute.)
var learnedEvery = 30 * time.Second

// learnedFirst is when the first of those saves comes, sooner than
// learnedEvery.
const learnedFirst = 5 * time.Second

// checkpointEarly is how often the run's summary is checkpointed over its
// first learnedEvery: a run killed in its first seconds keeps its counts.
const checkpointEarly = time.Second

// restoreLearned gives lim what an earlier run in dir learned. A missing
// file is a first run; a file that cannot be read is reported and ignored
// (the crawl learns again; nothing else depends on it).
func restoreLearned(dir string, lim *limit.Limiter, now time.Time, stderr io.Writer) {
	path := filepath.Join(dir, learnedFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var l limit.Learned
	if err == nil {
		err = json.Unmarshal(data, &l)
	}
	if err != nil {
		fmt.Fprintf(stderr, "exitgate: %s%s: %v; learning every host again\n", path, jsonPlace(data, err), err)
		return
	}
	n, err := lim.Restore(l, now)
	rated, waits, until := 0, 0, time.Time{}
	for _, h := range l.Hosts {
		if !h.OnlyWaits() {
			rated++
		}
		for _, w := range h.Waits {
			if w.Until.After(now) {
				waits++
				if w.Until.After(until) {
					until = w.Until
				}
			}
		}
	}
	if waits > 0 {
		// Said, so that a resumed crawl that sends nothing for a while
		// is seen to wait for the servers, not to hang.
		what := "1 wait the servers asked for before the last run stopped still holds"
		if waits > 1 {
			what = fmt.Sprintf("%d waits the servers asked for before the last run stopped still hold", waits)
		}
		fmt.Fprintf(stderr, "exitgate: %s (until %s at the latest)\n", what, until.Local().Format(time.TimeOnly))
	}
	if err != nil {
		fmt.Fprintf(stderr, "exitgate: %s: %v\n", path, err)
	} else if n == 0 && rated > 0 {
		// Said: such state was dropped without a word, and a user saw
		// every host learned again from the first guess.
		fmt.Fprintf(stderr, "exitgate: %s: what was learned about %d hosts is more than a day old (saved %v ago): learning every host again\n",
			path, rated, now.Sub(l.Saved).Round(time.Second))
	}
	if n > 0 {
		age := now.Sub(l.Saved)
		how := "trusted: up to 10 minutes old"
		if age > 10*time.Minute {
			how = "older than 10 minutes: to be proven again"
		}
		hosts := "hosts"
		if n == 1 {
			hosts = "host"
		}
		fmt.Fprintf(stderr, "exitgate: resumed what was learned about %d %s %v ago (%s)\n", n, hosts, age.Round(time.Second), how)
	}
}

// jsonPlace is ":line:column" of a JSON decoding error in data (the
// offending byte, or the end of a value of the wrong type), or "".
func jsonPlace(data []byte, err error) string {
	var off int64
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset - 1 // the offending byte, read last
	case errors.As(err, &te):
		off = te.Offset
	default:
		return ""
	}
	off = min(max(off, 0), int64(len(data)))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(data[:off], '\n'))
	return fmt.Sprintf(":%d:%d", line, col)
}

// saveLearned writes what lim learned to dir atomically: a crash or a full
// disk leaves the previous file whole.
func saveLearned(dir string, lim *limit.Limiter, now time.Time) error {
	l := lim.Learned(now)
	if len(l.Hosts) == 0 {
		return nil
	}
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, learnedFile), append(data, '\n'))
}

// writeFileAtomic writes data to a temporary file in path's directory,
// syncs it and renames it over path.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// keepSavingLearned saves what lim learned every learnedEvery until stop is
// closed, then once more. Until stop it also calls also, if not nil, every
// checkpointEarly over the run's first learnedEvery, then every learnedEvery
// (the crawl checkpoints its run's summary there).
func keepSavingLearned(dir string, lim *limit.Limiter, stop <-chan struct{}, stderr io.Writer, also func()) (done <-chan struct{}) {
	d := make(chan struct{})
	save := func() {
		if err := saveLearned(dir, lim, time.Now()); err != nil {
			fmt.Fprintf(stderr, "exitgate: saving what was learned: %v\n", err)
		}
	}
	go func() {
		defer close(d)
		start := time.Now()
		// The first save comes soon: a run killed within its first 30 s
		// left neither its counts in summary.json nor what it learned
		// (16 runs killed at 15 s read as one run).
		t := time.NewTimer(min(learnedFirst, learnedEvery))
		defer t.Stop()
		// The run's counts sooner still, and often at first: runs killed
		// within their first seconds left none (eight killed at 0.2-2.5 s
		// each, then a ninth that finished: summary.json said 110
		// requests for 800 URLs done, in a helper's blind run).
		c := time.NewTimer(min(checkpointEarly, learnedEvery))
		defer c.Stop()
		cp := c.C
		if also == nil {
			cp = nil
		}
		for {
			select {
			case <-t.C:
				t.Reset(learnedEvery)
				save()
			case <-cp:
				also()
				next := learnedEvery
				if time.Since(start) < learnedEvery {
					next = min(checkpointEarly, learnedEvery)
				}
				c.Reset(next)
			case <-stop:
				save()
				return
			}
		}
	}()
	return d
}
