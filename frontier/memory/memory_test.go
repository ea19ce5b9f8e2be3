package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/frontiertest"
)

var ctx = context.Background()

var t0 = frontiertest.T0

func newStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v) error: %v", cfg, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	frontiertest.TestFrontier(t, func(t *testing.T) frontier.Frontier {
		return newStore(t, Config{})
	})
}

func TestConformanceShortLease(t *testing.T) {
	frontiertest.TestFrontier(t, func(t *testing.T) frontier.Frontier {
		return newStore(t, Config{Lease: time.Second})
	})
}

func TestNew(t *testing.T) {
	if _, err := New(Config{Lease: -time.Second}); err == nil {
		t.Fatalf("New(Lease -1s) = nil error, want one")
	}
	s := newStore(t, Config{})
	mustPush(t, s, frontier.NewJob{URL: "http://a.example/"})
	if j := claimN(t, s, t0, 1)[0]; !j.LeaseUntil.Equal(t0.Add(DefaultLease)) {
		t.Fatalf("Claim() with the zero Config leases until %v, want %v", j.LeaseUntil, t0.Add(DefaultLease))
	}
}

func TestClose(t *testing.T) {
	s := newStore(t, Config{})
	mustPush(t, s, frontier.NewJob{URL: "http://a.example/"})
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() twice = %v", err)
	}
	if _, err := s.Push(ctx, []frontier.NewJob{{URL: "http://a.example/x"}}); !errors.Is(err, frontier.ErrClosed) {
		t.Errorf("Push(closed) = %v, want ErrClosed", err)
	}
	if _, err := s.Claim(ctx, t0, 1, nil); !errors.Is(err, frontier.ErrClosed) {
		t.Errorf("Claim(closed) = %v, want ErrClosed", err)
	}
	if _, err := s.Get(ctx, 1); !errors.Is(err, frontier.ErrClosed) {
		t.Errorf("Get(closed) = %v, want ErrClosed", err)
	}
	if err := s.Complete(ctx, frontier.Lease{ID: 1, Seq: 1}, frontier.Result{}); !errors.Is(err, frontier.ErrClosed) {
		t.Errorf("Complete(closed) = %v, want ErrClosed", err)
	}
}

func TestCanceledContext(t *testing.T) {
	s := newStore(t, Config{})
	c, cancel := context.WithCancel(ctx)
	cancel()
	if n, err := s.Push(c, []frontier.NewJob{{URL: "http://a.example/"}}); !errors.Is(err, context.Canceled) || n != 0 {
		t.Fatalf("Push(canceled) = %d, %v, want 0, context.Canceled", n, err)
	}
	if c := counts(t, s); c.Total() != 0 {
		t.Fatalf("Counts() after a canceled push = %+v, want empty", c)
	}
}

func mustPush(t testing.TB, s *Store, jobs ...frontier.NewJob) {
	t.Helper()
	if n, err := s.Push(ctx, jobs); err != nil || n != len(jobs) {
		t.Fatalf("Push(%d jobs) = %d, %v, want %d, nil", len(jobs), n, err, len(jobs))
	}
}

func claimN(t testing.TB, s *Store, now time.Time, max int) []frontier.Job {
	t.Helper()
	js, err := s.Claim(ctx, now, max, nil)
	if err != nil {
		t.Fatalf("Claim(%v, %d) error: %v", now, max, err)
	}
	return js
}

func counts(t testing.TB, s *Store) frontier.Counts {
	t.Helper()
	c, err := s.Counts(ctx)
	if err != nil {
		t.Fatalf("Counts() error: %v", err)
	}
	return c
}

func hostSeq(js []frontier.Job) []string {
	var hs []string
	for _, j := range js {
		hs = append(hs, j.Host)
	}
	return hs
}

// TestLeastRecentlyServed checks that a host whose work falls due after a
// wait is served before hosts served more recently, not behind them.
func TestLeastRecentlyServed(t *testing.T) {
	s := newStore(t, Config{})
	mustPush(t, s, frontier.NewJob{URL: "http://a.example/1"}, frontier.NewJob{URL: "http://a.example/2", Due: t0.Add(time.Minute)})
	mustPush(t, s, urls("b.example", 5)...)
	mustPush(t, s, urls("c.example", 5)...)
	if got, want := hostSeq(claimN(t, s, t0, 3)), []string{"a.example", "b.example", "c.example"}; !slices.Equal(got, want) {
		t.Fatalf("Claim(T0, 3) hosts = %v, want %v", got, want)
	}
	// a waits for its second job; b and c are served meanwhile.
	if got, want := hostSeq(claimN(t, s, t0, 2)), []string{"b.example", "c.example"}; !slices.Equal(got, want) {
		t.Fatalf("Claim(T0, 2) hosts = %v, want %v", got, want)
	}
	now := t0.Add(time.Minute)
	r, err := s.Ready(ctx, now, 0)
	if want := []string{"a.example", "b.example", "c.example"}; err != nil || !slices.Equal(r.Hosts, want) {
		t.Fatalf("Ready(T0+1m) = %+v, %v, want hosts %v", r, err, want)
	}
	if got, want := hostSeq(claimN(t, s, now, 1)), []string{"a.example"}; !slices.Equal(got, want) {
		t.Fatalf("Claim(T0+1m, 1) hosts = %v, want %v: a was served least recently", got, want)
	}
}

// TestClockBackwards checks that a host found due at a later instant is
// not served at an earlier one, and that Ready's Next stays exact.
func TestClockBackwards(t *testing.T) {
	s := newStore(t, Config{})
	due := t0.Add(time.Hour)
	mustPush(t, s, frontier.NewJob{URL: "http://a.example/", Due: due})
	if r, err := s.Ready(ctx, due, 10); err != nil || len(r.Hosts) != 1 {
		t.Fatalf("Ready(due) = %+v, %v, want a.example", r, err)
	}
	if js := claimN(t, s, t0, 10); len(js) != 0 {
		t.Fatalf("Claim(T0) = %+v, want nothing before %v", js, due)
	}
	if r, err := s.Ready(ctx, t0, 10); err != nil || len(r.Hosts) != 0 || !r.Next.Equal(due) {
		t.Fatalf("Ready(T0) = %+v, %v, want no hosts, next %v", r, err, due)
	}
	if js := claimN(t, s, due, 10); len(js) != 1 {
		t.Fatalf("Claim(due) = %d jobs, want 1", len(js))
	}
}

// TestTimeEncoding checks due times at the edges of what the store holds.
func TestTimeEncoding(t *testing.T) {
	s := newStore(t, Config{})
	old := time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)
	epoch := time.Unix(0, 0)
	far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	mustPush(t, s,
		frontier.NewJob{URL: "http://a.example/far", Due: far},
		frontier.NewJob{URL: "http://a.example/epoch", Due: epoch},
		frontier.NewJob{URL: "http://a.example/old", Due: old},
		frontier.NewJob{URL: "http://a.example/now"},
	)
	for id, want := range map[int64]time.Time{2: epoch, 3: old, 4: {}} {
		if j, err := s.Get(ctx, id); err != nil || !j.Due.Equal(want) || j.Due.IsZero() != want.IsZero() {
			t.Errorf("Get(%d).Due = %v, %v, want %v", id, j.Due, err, want)
		}
	}
	if j, _ := s.Get(ctx, 1); j.Due.Year() != 2262 {
		t.Errorf("Get(1).Due = %v, want clamped to 2262", j.Due)
	}
	var got []string
	for _, j := range claimN(t, s, t0, 10) {
		got = append(got, j.URL)
	}
	// Zero ("immediately") comes before every real instant, even 1960.
	if want := []string{"http://a.example/now", "http://a.example/old", "http://a.example/epoch"}; !slices.Equal(got, want) {
		t.Fatalf("Claim(T0) order = %v, want %v", got, want)
	}
	// A lease from a clock at the end of time cannot be taken twice.
	s2 := newStore(t, Config{})
	mustPush(t, s2, frontier.NewJob{URL: "http://a.example/"})
	end := time.Unix(0, math.MaxInt64)
	if js := claimN(t, s2, end, 10); len(js) != 1 {
		t.Fatalf("Claim(end of time, 10) = %d jobs, want 1", len(js))
	}
}

func TestFinishedAcrossWords(t *testing.T) {
	s := newStore(t, Config{})
	mustPush(t, s, urls("a.example", 300)...)
	js := claimN(t, s, t0, 300)
	var want []int64
	for _, j := range js {
		if j.ID%7 == 0 || j.ID == 1 || j.ID == 300 {
			if err := s.Complete(ctx, j.Lease(), frontier.Result{Status: 200}); err != nil {
				t.Fatalf("Complete(%d) error: %v", j.ID, err)
			}
			want = append(want, j.ID)
		}
	}
	slices.Sort(want)
	for _, limit := range []int{1, 3, 64, 1000} {
		var got []int64
		for after := int64(-5); ; {
			page, err := s.Finished(ctx, after, limit)
			if err != nil {
				t.Fatalf("Finished(%d, %d) error: %v", after, limit, err)
			}
			if len(page) == 0 {
				break
			}
			if len(page) > limit {
				t.Fatalf("Finished(%d, %d) = %d jobs", after, limit, len(page))
			}
			for _, j := range page {
				got = append(got, j.ID)
			}
			after = page[len(page)-1].ID
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Finished pages of %d = %v, want %v", limit, got, want)
		}
	}
	if page, err := s.Finished(ctx, 300, 10); err != nil || len(page) != 0 {
		t.Fatalf("Finished(300, 10) = %v, %v, want none", page, err)
	}
}

// TestMemoryPerJob checks the per-job overhead the package doc states.
func TestMemoryPerJob(t *testing.T) {
	const n = 50_000
	jobs := benchJobs(0, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 1000 {
		if _, err := s.Push(ctx, jobs[i:i+1000]); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	runtime.KeepAlive(s)
	runtime.KeepAlive(jobs)
	t.Logf("%.0f bytes per job beyond its URL", per)
	if per > 300 {
		t.Errorf("heap grew %.0f bytes per job beyond its URL, want at most 300", per)
	}
}

func urls(host string, n int) []frontier.NewJob {
	jobs := make([]frontier.NewJob, n)
	for i := range jobs {
		jobs[i] = frontier.NewJob{URL: fmt.Sprintf("http://%s/p%d", host, i)}
	}
	return jobs
}
