package memory

import (
	"fmt"
	"testing"
	"time"

	"github.com/exitgate/exitgate/frontier"
)

const (
	benchTotal = 100_000
	benchHosts = 1_000
)

// benchJobs returns jobs from..from+count spread over 1,000 hosts, with
// paths and queries about as long as real ones (as frontier/sqlite's
// benchmarks use).
func benchJobs(from, count int) []frontier.NewJob {
	jobs := make([]frontier.NewJob, count)
	for i := range jobs {
		k := from + i
		jobs[i] = frontier.NewJob{URL: fmt.Sprintf("https://www.shop%d.example/catalog/item/%d?ref=list&page=%d", k%benchHosts, k, k%97)}
	}
	return jobs
}

// cpuMeter measures the process's CPU time over a benchmark's timed
// region. On a machine shared with other work, wall time per op (ns/op)
// counts time spent waiting for a core; cpu-ns/op does not. It includes
// the garbage collector's background work.
type cpuMeter struct {
	b            *testing.B
	since, spent time.Duration
	ok           bool
}

func startCPU(b *testing.B) *cpuMeter {
	c := &cpuMeter{b: b}
	c.since, c.ok = processCPU()
	return c
}

// stop pauses the benchmark timer and the meter.
func (c *cpuMeter) stop() {
	c.b.StopTimer()
	now, _ := processCPU()
	c.spent += now - c.since
}

// start resumes both.
func (c *cpuMeter) start() {
	c.since, _ = processCPU()
	c.b.StartTimer()
}

// report adds the cpu-ns/op metric; call it right after the loop.
func (c *cpuMeter) report() {
	now, _ := processCPU()
	if c.ok && c.b.N > 0 {
		c.b.ReportMetric(float64(c.spent+now-c.since)/float64(c.b.N), "cpu-ns/op")
	}
}

// filled returns a store holding jobs, pushed in batches of 1,000.
func filled(b *testing.B, jobs []frontier.NewJob, cfg Config) *Store {
	b.Helper()
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < len(jobs); i += 1000 {
		if _, err := s.Push(ctx, jobs[i:min(i+1000, len(jobs))]); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkPush pushes new URLs in batches of 1,000 into a store that
// already holds 100,000 jobs over 1,000 hosts. One op is one job.
func BenchmarkPush(b *testing.B) {
	jobs := benchJobs(0, 2*benchTotal)
	s := filled(b, jobs[:benchTotal], Config{})
	next := benchTotal
	b.ReportAllocs()
	cpu := startCPU(b)
	for b.Loop() {
		if next == len(jobs) {
			cpu.stop()
			s = filled(b, jobs[:benchTotal], Config{})
			next = benchTotal
			cpu.start()
		}
		// One job per op, in batches: a batch of 1,000 every 1,000 ops.
		if next%1000 == 0 {
			if _, err := s.Push(ctx, jobs[next:next+1000]); err != nil {
				b.Fatal(err)
			}
		}
		next++
	}
	cpu.report()
}

// BenchmarkPushDuplicate pushes URLs the store already holds, as a crawl
// re-pushing discovered links does.
func BenchmarkPushDuplicate(b *testing.B) {
	jobs := benchJobs(0, benchTotal)
	s := filled(b, jobs, Config{})
	i := 0
	b.ReportAllocs()
	cpu := startCPU(b)
	for b.Loop() {
		if n, err := s.Push(ctx, jobs[i:i+1]); err != nil || n != 0 {
			b.Fatalf("Push(duplicate) = %d, %v", n, err)
		}
		i = (i + 1) % len(jobs)
	}
	cpu.report()
}

// BenchmarkClaimComplete claims one job and completes it, from a store of
// 100,000 jobs over 1,000 hosts (refilled when it runs dry).
func BenchmarkClaimComplete(b *testing.B) {
	jobs := benchJobs(0, benchTotal)
	s := filled(b, jobs, Config{})
	now := t0
	b.ReportAllocs()
	cpu := startCPU(b)
	for b.Loop() {
		js, err := s.Claim(ctx, now, 1, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(js) == 0 {
			cpu.stop()
			s = filled(b, jobs, Config{})
			cpu.start()
			continue
		}
		if err := s.Complete(ctx, js[0].Lease(), frontier.Result{Status: 200, Bytes: 1000}); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report()
}

// BenchmarkClaimRetry claims one job and retries it 50 ms of virtual time
// later, the clock advancing 1 µs per op: a store of 100,000 jobs over
// 1,000 hosts that never runs dry, with retried jobs falling due again.
func BenchmarkClaimRetry(b *testing.B) {
	s := filled(b, benchJobs(0, benchTotal), Config{})
	now := t0
	b.ReportAllocs()
	cpu := startCPU(b)
	for b.Loop() {
		now = now.Add(time.Microsecond)
		js, err := s.Claim(ctx, now, 1, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(js) != 1 {
			b.Fatalf("Claim(%v, 1) = %d jobs", now, len(js))
		}
		if err := s.Retry(ctx, js[0].Lease(), now.Add(50*time.Millisecond), true, 503, "http 503"); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report()
}

// BenchmarkClaim64Complete claims 64 jobs at a time (64 hosts) and
// completes them. One op is one job.
func BenchmarkClaim64Complete(b *testing.B) {
	jobs := benchJobs(0, benchTotal)
	s := filled(b, jobs, Config{})
	var held []frontier.Job
	b.ReportAllocs()
	cpu := startCPU(b)
	for b.Loop() {
		if len(held) == 0 {
			var err error
			if held, err = s.Claim(ctx, t0, 64, nil); err != nil {
				b.Fatal(err)
			}
			if len(held) == 0 {
				cpu.stop()
				s = filled(b, jobs, Config{})
				cpu.start()
				continue
			}
		}
		if err := s.Complete(ctx, held[0].Lease(), frontier.Result{Status: 200}); err != nil {
			b.Fatal(err)
		}
		held = held[1:]
	}
	cpu.report()
}

// BenchmarkReady asks which hosts are ready, up to 16, with all 1,000 due.
func BenchmarkReady(b *testing.B) {
	s := filled(b, benchJobs(0, benchTotal), Config{})
	b.ReportAllocs()
	cpu := startCPU(b)
	for b.Loop() {
		if r, err := s.Ready(ctx, t0, 16); err != nil || len(r.Hosts) != 16 {
			b.Fatalf("Ready() = %d hosts, %v", len(r.Hosts), err)
		}
	}
	cpu.report()
}
