package peerbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/exitgate/exitgate/internal/peers"
	"github.com/exitgate/exitgate/report"
)

// crawlWorkers runs cfg.Workers `exitgate crawl --redis` processes at once
// against a redis-server of the run's own, every one with the same proxies
// file, URL file and flags but its own --out, and adds up what they
// report. The server's log measures them as it measures one crawl.
func crawlWorkers(ctx context.Context, cfg RunConfig, urlFile string, exits *Exits, urls int) (client, error) {
	// The run's own redis-server, in the run's directory: no crawl of an
	// earlier run (or of a run beside it) is there for the workers to join.
	rdb, err := peers.StartRetry(func() (*peers.Redis, error) {
		return peers.StartRedis(peers.RedisConfig{Dir: filepath.Join(cfg.Dir, "redis")})
	})
	if err != nil {
		return client{}, err
	}
	defer rdb.Close()
	// Setup (the URL file into Redis) and the end-of-run report come on
	// top of the duration, as for one crawl.
	rctx, cancel := context.WithTimeout(ctx, cfg.Duration+3*time.Minute)
	defer cancel()
	outs := make([]string, cfg.Workers)
	cmds := make([]peers.Command, cfg.Workers)
	for k := range cfg.Workers {
		outs[k] = filepath.Join(cfg.Dir, fmt.Sprintf("w%d", k+1))
		// Every worker gets the URL file: whichever seeds first, the
		// others find the same list recorded and add nothing. --log-level
		// debug only adds the limiter's change records to each worker's
		// stderr (exitgate-crawl-wK.stderr in the run's directory).
		args := []string{"crawl", "--redis", rdb.URL(), "--crawl", cfg.Target.Name, "--proxies", exits.File,
			"--duration", cfg.Duration.String(), "--ignore-robots", "--log-level", "debug", "--out", outs[k], urlFile}
		// Exit code 4: URLs left to do when --duration ends, as a bench
		// run is meant to.
		cmds[k] = peers.Command{Name: fmt.Sprintf("exitgate-crawl-w%d", k+1), Bin: cfg.CrawlBinary, Args: args, Dir: cfg.Dir, Success: []int{4}}
	}
	errs := make([]error, cfg.Workers)
	var wg sync.WaitGroup
	for k, cmd := range cmds {
		wg.Go(func() {
			errs[k] = cmd.Run(rctx)
			if errs[k] != nil {
				// A worker that fails leaves the others a crawl that is no
				// longer the one measured: stop the run at once.
				cancel()
			}
		})
	}
	wg.Wait()
	if err := workerError(errs, rdb); err != nil {
		return client{}, err
	}
	c := client{counts: newCounts(), command: append([]string{cfg.CrawlBinary}, cmds[0].Args...)}
	// The frontier is the crawl's, shared: each worker's summary counts it
	// as that worker last saw it. The latest view (the most URLs finished)
	// is the crawl's at its end.
	finished := -1
	for _, out := range outs {
		sum, err := readSummary(out, urls)
		if err != nil {
			return c, err
		}
		if f := sum.Done + sum.NotFound + sum.Abandoned; f > finished {
			finished = f
			c.done, c.abandoned, c.queued, c.parked, c.reasons = sum.Done, sum.Abandoned, sum.Queued, sum.Parked, sum.AbandonedByReason
		}
		// Each worker counts the requests it sent, through the exits it
		// owned while it sent them: the sum is the crawl's.
		if err := c.addExits(sum, exits); err != nil {
			return c, fmt.Errorf("%s: %w", out, err)
		}
	}
	c.duplicates, c.workerRows, err = duplicateURLs(outs)
	return c, err
}

// workerError joins the workers' failures, leaving out the ones that only
// say the run was stopped because another had failed, and adds
// redis-server's output when a worker failed.
func workerError(errs []error, rdb *peers.Redis) error {
	var failed []error
	for k, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			failed = append(failed, fmt.Errorf("worker w%d: %w", k+1, err))
		}
	}
	if len(failed) == 0 {
		// Every failure was a cancellation: the caller's context ended.
		for k, err := range errs {
			if err != nil {
				return fmt.Errorf("worker w%d: %w", k+1, err)
			}
		}
		return nil
	}
	return fmt.Errorf("%w\nredis-server %s:\n%s", errors.Join(failed...), rdb.Addr(), rdb.Tail())
}

// duplicateURLs checks the results.jsonl of every crawl output in outs for
// a URL finished twice, and returns how many result lines repeat a URL and
// how many rows each output finished itself. Two things are checked. Within
// one file, no URL twice: a crawl's file holds each finished URL once. And
// across the outputs, no URL among the rows two workers each finished
// themselves: at its end a worker reconciles its file with the shared
// frontier, so every worker's file holds every URL of the crawl, the other
// workers' as rows rebuilt from the frontier, and a plain union would
// count each URL once per worker. A row is the worker's own when it carries
// what the response said (fetched_at), which a rebuilt row lacks, or its
// body is in the worker's own output (a rebuilt row's is ../wK/bodies/...).
// A URL abandoned without a response has neither, and is checked within
// each file only.
func duplicateURLs(outs []string) (dups int, own []int, err error) {
	owner := map[string]int{} // URL: the output whose own row finished it
	own = make([]int, len(outs))
	for k, out := range outs {
		path := filepath.Join(out, "results.jsonl")
		f, err := os.Open(path)
		if err != nil {
			return 0, nil, err
		}
		seen := map[string]bool{}
		dec := json.NewDecoder(f)
		for {
			var line report.Result
			err := dec.Decode(&line)
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return 0, nil, fmt.Errorf("%s: %w", path, err)
			}
			if seen[line.URL] {
				dups++
				continue
			}
			seen[line.URL] = true
			if line.FetchedAt.IsZero() && (line.Body == "" || strings.HasPrefix(line.Body, "..")) {
				continue
			}
			own[k]++
			if _, ok := owner[line.URL]; ok {
				dups++
			}
			owner[line.URL] = k
		}
		f.Close()
	}
	return dups, own, nil
}
