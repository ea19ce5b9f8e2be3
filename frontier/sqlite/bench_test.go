package sqlite

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/frontiertest"
)

// benchURLs returns jobs n..n+count spread over 1,000 hosts, with paths
// and queries about as long as real ones.
func benchURLs(n, count int) []frontier.NewJob {
	jobs := make([]frontier.NewJob, count)
	for i := range jobs {
		k := n + i
		jobs[i] = frontier.NewJob{URL: fmt.Sprintf("https://www.shop%d.example/catalog/item/%d?ref=list&page=%d", k%1000, k, k%97)}
	}
	return jobs
}

func syncModes(b *testing.B, fn func(b *testing.B, s *Store)) {
	for _, m := range []struct {
		name string
		sync Sync
	}{{"normal", SyncNormal}, {"full", SyncFull}} {
		b.Run(m.name, func(b *testing.B) {
			fn(b, openTemp(b, Config{Sync: m.sync}))
		})
	}
}

func reportJobs(b *testing.B, jobs int) {
	b.ReportMetric(float64(jobs)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkPush pushes batches of 1,000 new URLs: one transaction each.
func BenchmarkPush(b *testing.B) {
	syncModes(b, func(b *testing.B, s *Store) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			if _, err := s.Push(ctx, benchURLs(n, 1000)); err != nil {
				b.Fatal(err)
			}
			n += 1000
		}
		reportJobs(b, n)
	})
}

// BenchmarkClaim claims 64 jobs per transaction from a frontier of
// 100,000 jobs over 1,000 hosts.
func BenchmarkClaim(b *testing.B) {
	syncModes(b, func(b *testing.B, s *Store) {
		fill(b, s, 0, 100_000)
		b.ReportAllocs()
		n, next := 0, 100_000
		for b.Loop() {
			js, err := s.Claim(ctx, frontiertest.T0, 64, nil)
			if err != nil {
				b.Fatal(err)
			}
			if len(js) < 64 {
				b.StopTimer()
				fill(b, s, next, 100_000)
				next += 100_000
				b.StartTimer()
			}
			n += len(js)
		}
		reportJobs(b, n)
	})
}

// BenchmarkComplete completes one claimed job per op: one transaction,
// one commit each, as a worker does when a response arrives.
func BenchmarkComplete(b *testing.B) {
	syncModes(b, func(b *testing.B, s *Store) {
		var held []frontier.Job
		next := 0
		b.ReportAllocs()
		for b.Loop() {
			if len(held) == 0 {
				b.StopTimer()
				fill(b, s, next, 10_000)
				next += 10_000
				var err error
				if held, err = s.Claim(ctx, frontiertest.T0, 10_000, nil); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			if err := s.Complete(ctx, held[0].Lease(), frontier.Result{Status: 200, Bytes: 1000}); err != nil {
				b.Fatal(err)
			}
			held = held[1:]
		}
		reportJobs(b, b.N)
	})
}

// BenchmarkCompleteParallel completes from 32 concurrent workers, as the
// engine does; concurrent completions share a commit (group commit).
func BenchmarkCompleteParallel(b *testing.B) {
	syncModes(b, func(b *testing.B, s *Store) {
		const total = 100_000
		fill(b, s, 0, total)
		held, err := s.Claim(ctx, frontiertest.T0, total, nil)
		if err != nil {
			b.Fatal(err)
		}
		jobs := make(chan frontier.Job, len(held))
		for _, j := range held {
			jobs <- j
		}
		close(jobs)
		b.ReportAllocs()
		b.SetParallelism(16)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				j, ok := <-jobs
				if !ok {
					b.Error("ran out of claimed jobs; lower -benchtime")
					return
				}
				if err := s.Complete(ctx, j.Lease(), frontier.Result{Status: 200}); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportJobs(b, b.N)
	})
}

// BenchmarkCycle is a job's whole life in the frontier: pushed in a batch
// of 64, claimed in a batch of 64, completed one by one. jobs/s is what the
// frontier sustains end to end.
func BenchmarkCycle(b *testing.B) {
	syncModes(b, func(b *testing.B, s *Store) {
		fill(b, s, 0, 100_000)
		b.ReportAllocs()
		n, next := 0, 100_000
		for b.Loop() {
			if _, err := s.Push(ctx, benchURLs(next, 64)); err != nil {
				b.Fatal(err)
			}
			next += 64
			js, err := s.Claim(ctx, frontiertest.T0, 64, nil)
			if err != nil {
				b.Fatal(err)
			}
			for _, j := range js {
				if err := s.Complete(ctx, j.Lease(), frontier.Result{Status: 200}); err != nil {
					b.Fatal(err)
				}
			}
			n += len(js)
		}
		reportJobs(b, n)
	})
}

func fill(tb testing.TB, s *Store, from, n int) {
	tb.Helper()
	const batch = 5000
	for i := from; i < from+n; i += batch {
		if _, err := s.Push(ctx, benchURLs(i, min(batch, from+n-i))); err != nil {
			tb.Fatal(err)
		}
	}
}

// rssKiB returns the process's resident set (VmRSS) and its peak (VmHWM)
// from /proc/self/status.
func rssKiB(t *testing.T) (rss, peak int) {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		if err != nil {
			t.Fatalf("parse %s %q: %v", k, v, err)
		}
		if k == "VmRSS" {
			rss = n
		} else {
			peak = n
		}
	}
	return rss, peak
}

// TestMemory pushes many URLs and checks how much the process grows.
// By default 100,000 URLs (20,000 under the race detector); set
// EXITGATE_FRONTIER_1M=1 for 1,000,000 (about 30 s):
//
//	EXITGATE_FRONTIER_1M=1 go test -run '^TestMemory$' -v ./frontier/sqlite
//
// The target is at most 200 MB of RSS with 1,000,000 queued URLs. The
// frontier itself holds only the page cache (Config.CacheMiB) and the
// per-host index; the URLs live in the file.
func TestMemory(t *testing.T) {
	n, limitMiB := 100_000, 100
	if raceEnabled {
		n = 20_000
	}
	if os.Getenv("EXITGATE_FRONTIER_1M") == "1" {
		n, limitMiB = 1_000_000, 200
	}
	path := filepath.Join(t.TempDir(), "memory.db")
	s := openTemp(t, Config{Path: path})
	runtime.GC()
	rss0, _ := rssKiB(t)
	start := time.Now()
	fill(t, s, 0, n)
	elapsed := time.Since(start)
	rss1, peak := rssKiB(t)
	c, _ := s.Counts(ctx)
	if c.Queued != n {
		t.Fatalf("Counts().Queued = %d, want %d", c.Queued, n)
	}
	// A claim must stay cheap at this size.
	cstart := time.Now()
	js, err := s.Claim(ctx, frontiertest.T0, 64, nil)
	if err != nil || len(js) != 64 {
		t.Fatalf("Claim(64) = %d, %v", len(js), err)
	}
	claimTook := time.Since(cstart)
	growth := (rss1 - rss0) / 1024
	t.Logf("pushed %d URLs over 1,000 hosts in %v (%.0f jobs/s); RSS %d MiB -> %d MiB (growth %d MiB, peak %d MiB); Claim(64) took %v",
		n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), rss0/1024, rss1/1024, growth, peak/1024, claimTook)
	if growth > limitMiB {
		t.Errorf("RSS grew %d MiB with %d queued URLs, want at most %d MiB", growth, n, limitMiB)
	}
	// Opening rebuilds the per-host index and the counts from the file.
	s.Close()
	ostart := time.Now()
	s = openTemp(t, Config{Path: path})
	if c, _ := s.Counts(ctx); c.Queued != n-64 || c.Leased != 64 {
		t.Errorf("Counts() after reopen = %+v, want %d queued, 64 leased", c, n-64)
	}
	t.Logf("reopening %d jobs took %v", n, time.Since(ostart).Round(time.Millisecond))
}
