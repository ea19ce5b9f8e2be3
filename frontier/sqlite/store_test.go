package sqlite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/frontiertest"
)

var ctx = context.Background()

func openTemp(t testing.TB, cfg Config) *Store {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "frontier.db")
	}
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open(%+v) error: %v", cfg, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	frontiertest.TestFrontier(t, func(t *testing.T) frontier.Frontier {
		s := openTemp(t, Config{})
		t.Cleanup(func() { checkIndex(t, s) })
		return s
	})
}

func TestConformanceSyncFull(t *testing.T) {
	frontiertest.TestFrontier(t, func(t *testing.T) frontier.Frontier {
		s := openTemp(t, Config{Sync: SyncFull, Lease: time.Second})
		t.Cleanup(func() { checkIndex(t, s) })
		return s
	})
}

// checkIndex compares the in-memory index with the file: the store derives
// it incrementally, and a drift would misschedule hosts silently.
func checkIndex(t *testing.T, s *Store) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, h := range s.sched.byID {
		active, next, err := s.minDue(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if h.active != active || (active && h.next != next) {
			t.Errorf("index has host %q active %v next %d; file has %v %d", h.name, h.active, h.next, active, next)
		}
		if h.heapIdx >= 0 && (h.inRing || s.sched.waiting[h.heapIdx] != h) {
			t.Errorf("host %q misfiled: heap index %d, in ring %v", h.name, h.heapIdx, h.inRing)
		}
		if active && h.heapIdx < 0 && !h.inRing {
			t.Errorf("active host %q is neither in the ring nor waiting", h.name)
		}
	}
	for st := frontier.Queued; st <= frontier.Abandoned; st++ {
		var n int
		if err := s.conn.QueryRowContext(ctx, "SELECT count(*) FROM jobs WHERE state = ?", st).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != s.counts[st] {
			t.Errorf("counts[%s] = %d, file has %d", st, s.counts[st], n)
		}
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.db")
	s, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t0 := frontiertest.T0
	if _, err := s.Push(ctx, []frontier.NewJob{
		{URL: "http://a.example/1"}, {URL: "http://a.example/2"}, {URL: "http://b.example/1"},
		{URL: "http://b.example/2", Due: t0.Add(time.Hour)},
	}); err != nil {
		t.Fatal(err)
	}
	js, err := s.Claim(ctx, t0, 3, nil)
	if err != nil || len(js) != 3 {
		t.Fatalf("Claim() = %d, %v", len(js), err)
	}
	if err := s.Complete(ctx, js[0].Lease(), frontier.Result{Status: 200}); err != nil {
		t.Fatal(err)
	}
	if err := s.Abandon(ctx, js[1].Lease(), 404, "http 404"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if _, err := s.Counts(ctx); !errors.Is(err, frontier.ErrClosed) {
		t.Fatalf("Counts() after Close = %v, want ErrClosed", err)
	}

	s = openTemp(t, Config{Path: path})
	c, _ := s.Counts(ctx)
	if c.Queued != 1 || c.Leased != 1 || c.Done != 1 || c.Abandoned != 1 || c.AbandonedByReason["http 404"] != 1 {
		t.Fatalf("Counts() after reopen = %+v, want 1 of each but parked", c)
	}
	r, err := s.Ready(ctx, t0, 10)
	if err != nil || len(r.Hosts) != 0 || !r.Next.Equal(js[2].LeaseUntil) {
		t.Fatalf("Ready() after reopen = %+v, %v, want nothing due before the lease expiry %v", r, err, js[2].LeaseUntil)
	}
	if n, err := s.Recover(ctx, t0); err != nil || n != 1 {
		t.Fatalf("Recover() = %d, %v, want 1", n, err)
	}
	got, err := s.Claim(ctx, t0.Add(time.Hour), 10, nil)
	if err != nil || len(got) != 2 {
		t.Fatalf("Claim() after recover = %d, %v, want 2", len(got), err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(ctx, Config{}); err == nil {
		t.Error("Open(no path) succeeded")
	}
	if _, err := Open(ctx, Config{Path: filepath.Join(dir, "a?b")}); err == nil {
		t.Error("Open(path with '?') succeeded")
	}
	if _, err := Open(ctx, Config{Path: filepath.Join(dir, "x"), Sync: 7}); err == nil {
		t.Error("Open(Sync 7) succeeded")
	}

	path := filepath.Join(dir, "held.db")
	s := openTemp(t, Config{Path: path})
	_, err := Open(ctx, Config{Path: path, BusyTimeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Errorf("Open(held by another connection) = %v, want ErrLocked", err)
	}
	s.Close()

	// A database of some other program.
	other := filepath.Join(dir, "other.db")
	db, err := Open(ctx, Config{Path: other})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.conn.ExecContext(ctx, "PRAGMA application_id = 42"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(ctx, Config{Path: other}); !errors.Is(err, ErrNotFrontier) {
		t.Errorf("Open(foreign database) = %v, want ErrNotFrontier", err)
	}

	newer := filepath.Join(dir, "newer.db")
	db, err = Open(ctx, Config{Path: newer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.conn.ExecContext(ctx, "PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(ctx, Config{Path: newer})
	var se *SchemaError
	if !errors.As(err, &se) || se.Got != 99 || se.Want != schemaVersion {
		t.Errorf("Open(schema 99) = %v, want *SchemaError{Got: 99}", err)
	}
}

// TestOpenMigratesSchema1: a frontier written by a build with schema 1 (no
// truncated column, no header and meta) opens, is migrated through schema 2
// to 3, keeps its jobs, and records truncation and job headers from then
// on.
func TestOpenMigratesSchema1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Push(ctx, []frontier.NewJob{{URL: "http://a.example/1"}, {URL: "http://a.example/2"}}); err != nil {
		t.Fatal(err)
	}
	js, err := db.Claim(ctx, time.Unix(1, 0), 1, nil)
	if err != nil || len(js) != 1 {
		t.Fatalf("Claim = %v, %v", js, err)
	}
	if err := db.Complete(ctx, js[0].Lease(), frontier.Result{Status: 200, Bytes: 3, Body: "b/1"}); err != nil {
		t.Fatal(err)
	}
	// Make it the file schema 1 wrote.
	if _, err := db.conn.ExecContext(ctx, "ALTER TABLE jobs DROP COLUMN truncated; ALTER TABLE jobs DROP COLUMN header; ALTER TABLE jobs DROP COLUMN meta; PRAGMA user_version = 1"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db, err = Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatalf("Open(schema 1) = %v, want it migrated", err)
	}
	defer db.Close()
	var ver int
	if err := db.conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&ver); err != nil || ver != schemaVersion {
		t.Errorf("user_version after migration = %d, %v; want %d", ver, err, schemaVersion)
	}
	if j, err := db.Get(ctx, js[0].ID); err != nil || j.State != frontier.Done || j.Result.Body != "b/1" || j.Result.Truncated {
		t.Errorf("Get(done before migration) = %+v, %v; want done, body b/1, not truncated", j, err)
	}
	js, err = db.Claim(ctx, time.Unix(2, 0), 1, nil)
	if err != nil || len(js) != 1 {
		t.Fatalf("Claim after migration = %v, %v", js, err)
	}
	if err := db.Complete(ctx, js[0].Lease(), frontier.Result{Status: 200, Bytes: 10, Truncated: true}); err != nil {
		t.Fatal(err)
	}
	if j, err := db.Get(ctx, js[0].ID); err != nil || !j.Result.Truncated || j.Header != nil {
		t.Errorf("Get(truncated) = %+v, %v; want Truncated, no header", j, err)
	}
	if _, err := db.Push(ctx, []frontier.NewJob{{URL: "http://a.example/3", Header: http.Header{"Cookie": {"a=1"}}}}); err != nil {
		t.Fatal(err)
	}
	js, err = db.Claim(ctx, time.Unix(3, 0), 1, nil)
	if err != nil || len(js) != 1 || js[0].Header.Get("Cookie") != "a=1" {
		t.Fatalf("Claim after migration = %+v, %v; want the job with its Cookie header", js, err)
	}
}

// TestClaimUsesIndex guards the query plans that keep Claim cheap on a
// big frontier.
func TestClaimUsesIndex(t *testing.T) {
	s := openTemp(t, Config{})
	for q, want := range map[string]string{
		"SELECT id FROM jobs WHERE host = 1 AND state < 4 ORDER BY due, id LIMIT 10": "SEARCH jobs USING INDEX jobs_due (host=?); ",
		"SELECT due FROM jobs WHERE host = 1 AND state < 4 ORDER BY due LIMIT 1":     "SEARCH jobs USING INDEX jobs_due (host=?); ",
		// The lease: the subquery reads the first rows of the host's range
		// in claim order (no sort, no scan of the rest), the update finds
		// them by rowid.
		"UPDATE jobs SET due = 1 WHERE id IN (SELECT id FROM jobs WHERE host = 1 AND state < 4 AND due <= 5 ORDER BY due, id LIMIT 64)": "SEARCH jobs USING INTEGER PRIMARY KEY (rowid=?); LIST SUBQUERY 1; SEARCH jobs USING INDEX jobs_due (host=? AND due<?); ",
	} {
		rows, err := s.conn.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q)
		if err != nil {
			t.Fatal(err)
		}
		var plan string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan += detail + "; "
		}
		rows.Close()
		if plan != want {
			t.Errorf("plan of %q = %q, want %q", q, plan, want)
		}
	}
}

// TestGroupCommitIsolatesLostLeases completes many jobs at once, one of
// them under a stale lease: only that call fails, the rest commit.
func TestGroupCommitIsolatesLostLeases(t *testing.T) {
	s := openTemp(t, Config{Sync: SyncFull})
	const n = 64
	fill(t, s, 0, n)
	js, err := s.Claim(ctx, frontiertest.T0, n, nil)
	if err != nil || len(js) != n {
		t.Fatalf("Claim(%d) = %d, %v", n, len(js), err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, j := range js {
		l := j.Lease()
		if i == 7 {
			l.Seq++ // not the current lease
		}
		wg.Go(func() { errs[i] = s.Complete(ctx, l, frontier.Result{Status: 200}) })
	}
	wg.Wait()
	for i, err := range errs {
		if i == 7 && !errors.Is(err, frontier.ErrLeaseLost) {
			t.Errorf("Complete(stale lease) = %v, want ErrLeaseLost", err)
		}
		if i != 7 && err != nil {
			t.Errorf("Complete(job %d) = %v, want nil", js[i].ID, err)
		}
	}
	if c, _ := s.Counts(ctx); c.Done != n-1 || c.Leased != 1 {
		t.Errorf("Counts() = %+v, want %d done, 1 leased", c, n-1)
	}
}

// TestRandomOps runs a seeded random sequence of operations and checks the
// in-memory index and counts against the file after each one.
func TestRandomOps(t *testing.T) {
	s := openTemp(t, Config{Lease: 10 * time.Second})
	rng := rand.New(rand.NewPCG(1, 2))
	now := frontiertest.T0
	var held []frontier.Job
	pick := func() (frontier.Job, bool) {
		if len(held) == 0 {
			return frontier.Job{}, false
		}
		i := rng.IntN(len(held))
		j := held[i]
		held = append(held[:i], held[i+1:]...)
		return j, true
	}
	later := func() time.Time { return now.Add(time.Duration(rng.IntN(30)) * time.Second) }
	for step := range 600 {
		var err error
		switch op := rng.IntN(11); op {
		case 0:
			jobs := make([]frontier.NewJob, rng.IntN(5))
			for i := range jobs {
				jobs[i] = frontier.NewJob{URL: fmt.Sprintf("http://h%d.example/%d", rng.IntN(4), rng.IntN(200))}
				if rng.IntN(3) == 0 {
					jobs[i].Due = later()
				}
			}
			_, err = s.Push(ctx, jobs)
		case 1, 2:
			var js []frontier.Job
			js, err = s.Claim(ctx, now, 1+rng.IntN(4), nil)
			held = append(held, js...)
		case 3:
			var js []frontier.Job
			js, err = s.ClaimHost(ctx, fmt.Sprintf("h%d.example", rng.IntN(4)), now, 2)
			held = append(held, js...)
		case 4:
			if j, ok := pick(); ok {
				err = s.Complete(ctx, j.Lease(), frontier.Result{Status: 200})
			}
		case 5:
			if j, ok := pick(); ok {
				err = s.Retry(ctx, j.Lease(), later(), rng.IntN(2) == 0, 500, "http 500")
			}
		case 6:
			if j, ok := pick(); ok {
				err = s.Park(ctx, j.Lease(), later(), 429, "retry-after")
			}
		case 7:
			if j, ok := pick(); ok {
				err = s.Abandon(ctx, j.Lease(), 404, "http 404")
			}
		case 8:
			if j, ok := pick(); ok {
				err = s.Release(ctx, j.Lease())
			}
		case 9:
			if j, ok := pick(); ok {
				err = s.Extend(ctx, j.Lease(), later())
				held = append(held, j)
			}
		case 10:
			now = now.Add(time.Duration(rng.IntN(5)) * time.Second)
			if rng.IntN(20) == 0 {
				_, err = s.Recover(ctx, now)
				held = nil
			}
			_, err = s.Ready(ctx, now, rng.IntN(3))
		}
		// A lease may have expired and been retaken: that is the store
		// doing its job, not a failure.
		if err != nil && !errors.Is(err, frontier.ErrLeaseLost) {
			t.Fatalf("step %d: %v", step, err)
		}
		checkIndex(t, s)
		if t.Failed() {
			t.Fatalf("index drifted at step %d", step)
		}
	}
}

// TestPushLargeBatches pushes batches big enough for the multi-row and
// JSON-array inserts, mixing plain jobs with pinned ones, headers, other
// methods, later due times and duplicates (within a batch and of earlier
// batches): every new job is added once, in push order within its host
// (hosts grouped by their first job, byHost), and the in-memory
// index matches the file.
func TestPushLargeBatches(t *testing.T) {
	s := openTemp(t, Config{})
	t0 := time.Unix(1000, 0)
	var want []string
	seen := map[string]bool{}
	for b := range 4 {
		var jobs []frontier.NewJob
		for i := range 700 {
			k := b*500 + i // overlaps the previous batch by 200
			nj := frontier.NewJob{URL: fmt.Sprintf("http://h%d.example/p/%d", k/300, k)}
			switch {
			case k/100%2 == 0:
				// plain: runs of up to 100 (one JSON array each)
			case k%97 == 0:
				nj.Exit = "e1"
			case k%89 == 0:
				nj.Header = http.Header{"Cookie": {fmt.Sprint(k)}}
			case k%83 == 0:
				nj.Method = "HEAD"
			case k%7 == 0:
				nj.Due = t0.Add(time.Duration(k) * time.Second)
			case k%11 == 0:
				nj.URL = fmt.Sprintf("http://H%d.example:80/p/%d", k/300, k) // not its own key
			}
			jobs = append(jobs, nj)
			if i%50 == 0 {
				jobs = append(jobs, nj) // a duplicate within the batch
			}
			key := nj.Method + " " + fmt.Sprintf("http://h%d.example/p/%d", k/300, k)
			if !seen[key] {
				seen[key] = true
				want = append(want, nj.URL)
			}
		}
		n, err := s.Push(ctx, jobs)
		if err != nil {
			t.Fatal(err)
		}
		checkIndex(t, s)
		if c, _ := s.Counts(ctx); c.Queued != len(want) {
			t.Fatalf("batch %d: Push added %d, queued %d; want %d queued", b, n, c.Queued, len(want))
		}
	}
	// Plain jobs whose hosts alternate: grouped by host (byHost), the
	// first host's first, each host's in push order.
	var alt []frontier.NewJob
	for i := range 300 {
		alt = append(alt, frontier.NewJob{URL: fmt.Sprintf("http://alt%d.example/%d", i%2, i)})
	}
	for h := range 2 {
		for i := h; i < 300; i += 2 {
			want = append(want, alt[i].URL)
		}
	}
	if _, err := s.Push(ctx, alt); err != nil {
		t.Fatal(err)
	}
	checkIndex(t, s)
	fin := make([]string, 0, len(want))
	for id := int64(1); len(fin) < len(want); id++ {
		j, err := s.Get(ctx, id)
		if errors.Is(err, frontier.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		fin = append(fin, j.URL)
		if id > int64(10*len(want)) {
			t.Fatalf("only %d of %d jobs found", len(fin), len(want))
		}
	}
	for i := range want {
		if fin[i] != want[i] {
			t.Fatalf("job %d in ID order is %q, want %q (push order within a host)", i, fin[i], want[i])
		}
	}
}
