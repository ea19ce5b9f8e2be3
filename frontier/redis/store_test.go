package redis_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/frontiertest"
	fr "github.com/exitgate/exitgate/frontier/redis"
	"github.com/exitgate/exitgate/internal/peers"
	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/internal/syncbuf"
)

var crawls atomic.Int64

func newStore(t *testing.T, rdb goredis.UniversalClient, cfg fr.Config) *fr.Store {
	t.Helper()
	if cfg.Crawl == "" {
		cfg.Crawl = fmt.Sprintf("test%d", crawls.Add(1))
	}
	s, err := fr.New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// outageRedis starts a redis-server that keeps what it is told across a
// kill (appendonly) and a client that gives up quickly while it is away,
// for the tests that take Redis down under a Store.
func outageRedis(t *testing.T) (*peertest.Redis, *goredis.Client) {
	t.Helper()
	r := peertest.StartRedisWith(t, peers.RedisConfig{AppendOnly: true})
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr(), DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return r, rdb
}

func TestConformance(t *testing.T) {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	t.Cleanup(func() { rdb.Close() })
	frontiertest.TestFrontier(t, func(t *testing.T) frontier.Frontier {
		return newStore(t, rdb, fr.Config{})
	})
}

// TestConformanceCluster runs the suite on a 3-master Redis Cluster: every
// host's keys share a slot, the crawl's own keys another.
func TestConformanceCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := peertest.StartRedisCluster(t, 3)
	rdb := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	frontiertest.TestFrontier(t, func(t *testing.T) frontier.Frontier {
		return newStore(t, rdb, fr.Config{})
	})
}

// TestKeepAlive: a Store that keeps its leases alive keeps its jobs past the
// lease TTL; one that stopped (a dead worker) loses them within it.
func TestKeepAlive(t *testing.T) {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	name := "keep"
	ttl := 600 * time.Millisecond
	a := newStore(t, rdb, fr.Config{Crawl: name, LeaseTTL: ttl, KeepAlive: true})
	b := newStore(t, rdb, fr.Config{Crawl: name, LeaseTTL: ttl})
	if _, err := a.Push(ctx, []frontier.NewJob{{URL: "http://a.example/1"}, {URL: "http://a.example/2"}}); err != nil {
		t.Fatal(err)
	}
	js, err := a.Claim(ctx, time.Now(), 1, nil)
	if err != nil || len(js) != 1 {
		t.Fatalf("Claim = %d jobs, %v", len(js), err)
	}
	held := js[0]
	// Well past the TTL, b may take only the other job.
	deadline := time.Now().Add(3 * ttl)
	for time.Now().Before(deadline) {
		got, err := b.Claim(ctx, time.Now(), 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range got {
			if j.ID == held.ID {
				t.Fatalf("job %d was claimed again while its holder kept its lease alive", j.ID)
			}
			if err := b.Complete(ctx, j.Lease(), frontier.Result{Status: 200}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(ttl / 6)
	}
	// The holder dies: its lease expires within the TTL and b gets the job.
	a.Close()
	died := time.Now()
	for {
		got, err := b.Claim(ctx, time.Now(), 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 1 && got[0].ID == held.ID {
			if d := time.Since(died); d > ttl+ttl/2 {
				t.Fatalf("the dead holder's job came back after %v, want within the TTL %v (and a tick)", d, ttl)
			}
			break
		}
		if time.Since(died) > 5*ttl {
			t.Fatalf("the dead holder's job never came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLeaseLost: a lease the keep-alive finds claimed by another worker
// (its holder could not keep it alive in time) is lost: LeaseLost says so
// once, and the holder stops extending it; a lease it still holds is not,
// nor one it settled.
func TestLeaseLost(t *testing.T) {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	ttl := 600 * time.Millisecond
	a := newStore(t, rdb, fr.Config{Crawl: "lost", LeaseTTL: ttl, KeepAlive: true})
	b := newStore(t, rdb, fr.Config{Crawl: "lost", LeaseTTL: ttl})
	if _, err := a.Push(ctx, []frontier.NewJob{{URL: "http://a.example/1"}, {URL: "http://a.example/2"}, {URL: "http://a.example/3"}}); err != nil {
		t.Fatal(err)
	}
	js, err := a.Claim(ctx, time.Now(), 3, nil)
	if err != nil || len(js) != 3 {
		t.Fatalf("Claim = %d jobs, %v", len(js), err)
	}
	// b claims as if the leases had run out (a clock a minute on): all
	// three are b's now. a settles one of them first.
	if err := a.Complete(ctx, js[2].Lease(), frontier.Result{Status: 200}); err != nil {
		t.Fatal(err)
	}
	taken, err := b.Claim(ctx, time.Now().Add(time.Minute), 3, nil)
	if err != nil || len(taken) != 2 {
		t.Fatalf("b's Claim a minute on = %d jobs, %v; want the two a did not settle", len(taken), err)
	}
	deadline := time.Now().Add(3 * ttl)
	for !a.LeaseLost(js[0].Lease()) {
		if time.Now().After(deadline) {
			t.Fatalf("a's lease of job %d, claimed by b, not reported lost after %v", js[0].ID, 3*ttl)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if a.LeaseLost(js[0].Lease()) {
		t.Error("a lost lease reported twice")
	}
	if !a.LeaseLost(js[1].Lease()) {
		t.Error("the second lease b claimed not reported lost")
	}
	if a.LeaseLost(js[2].Lease()) {
		t.Error("a lease a settled reported lost")
	}
	if n := a.Held(); n != 0 {
		t.Errorf("a holds %d leases, want none: lost ones are not kept alive", n)
	}
	// b's leases are its own: a's keep-alive did not take them over.
	for _, j := range taken {
		if err := b.Complete(ctx, j.Lease(), frontier.Result{Status: 200}); err != nil {
			t.Errorf("b completing job %d: %v", j.ID, err)
		}
	}
}

// TestJournal: with Redis killed, settling goes to the journal and claims
// return nothing; once Redis is back (with its append-only file), the
// journal is replayed and nothing is lost.
func TestJournal(t *testing.T) {
	r, rdb := outageRedis(t)
	ctx := context.Background()
	s := newStore(t, rdb, fr.Config{Crawl: "journal", LeaseTTL: 10 * time.Second, KeepAlive: true,
		Journal: filepath.Join(t.TempDir(), "journal")})
	var jobs []frontier.NewJob
	for i := range 20 {
		jobs = append(jobs, frontier.NewJob{URL: fmt.Sprintf("http://h%d.example/x", i%3)})
		jobs[i].URL += fmt.Sprint(i)
	}
	if _, err := s.Push(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	js, err := s.Claim(ctx, time.Now(), 20, nil)
	if err != nil || len(js) != 20 {
		t.Fatalf("Claim = %d, %v", len(js), err)
	}
	if _, err := s.Counts(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	for i, j := range js[:10] {
		var err error
		if i%2 == 0 {
			err = s.Complete(ctx, j.Lease(), frontier.Result{Status: 200, Exit: "e1"})
		} else {
			err = s.Retry(ctx, j.Lease(), time.Time{}, true, 500, "http 500")
		}
		if err != nil {
			t.Fatalf("settle while Redis is down = %v, want nil (journaled)", err)
		}
	}
	if got, err := s.Claim(ctx, time.Now(), 10, nil); err != nil || len(got) != 0 {
		t.Fatalf("Claim while down = %d jobs, %v, want none and no error", len(got), err)
	}
	// The last counts read, with what was journaled since (they stood
	// still at the outage's start).
	if c, err := s.Counts(ctx); err != nil || c.Leased != 10 || c.Done != 5 || c.Queued != 5 {
		t.Fatalf("Counts while down = %+v, %v, want the last counts read moved by the journal: 10 leased, 5 done, 5 queued", c, err)
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := s.Counts(ctx)
		if err == nil && c.Done == 5 && c.Queued == 5 && c.Leased == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Counts after Redis came back = %+v, %v, want 5 done, 5 queued, 10 leased", c, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, j := range js[10:] {
		if err := s.Complete(ctx, j.Lease(), frontier.Result{Status: 200}); err != nil {
			t.Fatal(err)
		}
	}
	// Claims wait a moment after the replay, for the other workers to
	// replay theirs (their leases ran out during the outage).
	if got, err := s.Claim(ctx, time.Now(), 20, nil); err != nil || len(got) != 0 {
		t.Fatalf("Claim right after the replay = %d, %v, want none yet", len(got), err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		got, err := s.Claim(ctx, time.Now(), 20, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 5 {
			break
		}
		if len(got) != 0 || time.Now().After(deadline) {
			t.Fatalf("Claim after the replay = %d, want the 5 retried jobs", len(got))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestJournalLeftByKilledRun: a worker killed while Redis was away leaves
// its journal; the same command run again, with Redis back, replays it as
// it opens: the crawl's counts are Redis's at once, with what the killed
// run finished. It read them as the empty counts of a Store that never read
// any, took the crawl for one not seeded yet and exited 2, the journal never
// replayed.
// journalOfAKilledRun pushes six URLs to crawl, claims them, kills Redis,
// completes four (journaled), stops the worker as a kill would (its journal
// stays) and restarts Redis; it returns a client once Redis serves again,
// and the killed worker's config.
func journalOfAKilledRun(t *testing.T, crawl string) (*goredis.Client, fr.Config) {
	t.Helper()
	r, rdb := outageRedis(t)
	ctx := context.Background()
	cfg := fr.Config{Crawl: crawl, LeaseTTL: 10 * time.Second, Journal: filepath.Join(t.TempDir(), "journal")}
	s, err := fr.New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Push(ctx, sixURLs()); err != nil {
		t.Fatal(err)
	}
	js, err := s.Claim(ctx, time.Now(), 6, nil)
	if err != nil || len(js) != 6 {
		t.Fatalf("Claim = %d, %v", len(js), err)
	}
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, j := range js[:4] {
		if err := s.Complete(ctx, j.Lease(), frontier.Result{Status: 200}); err != nil {
			t.Fatalf("Complete while Redis is down = %v, want nil (journaled)", err)
		}
	}
	s.Close() // the worker is killed: its journal stays
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	// Redis serves once it answers: listening is not yet that (it answers
	// LOADING while it reads its append-only file, and the client's first
	// command may go out on a connection of the killed server).
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := rdb.Get(ctx, "exitgate-test-serving").Err()
		if err == nil || errors.Is(err, goredis.Nil) {
			return rdb, cfg
		}
		if time.Now().After(deadline) {
			t.Fatalf("Redis restarted but not serving after 10 s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sixURLs() []frontier.NewJob {
	var jobs []frontier.NewJob
	for i := range 6 {
		jobs = append(jobs, frontier.NewJob{URL: fmt.Sprintf("http://k.example/%d", i)})
	}
	return jobs
}

func TestJournalLeftByKilledRun(t *testing.T) {
	rdb, cfg := journalOfAKilledRun(t, "killed")
	ctx := context.Background()
	again, err := fr.New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	c, err := again.Counts(ctx)
	if err != nil || c.Total() != 6 || c.Done != 4 {
		t.Fatalf("Counts as the run again opens = %+v, %v; want 6 URLs, the 4 the killed run finished done", c, err)
	}
}

// TestJournalOfAnEarlierCrawl: a worker killed while Redis was away leaves
// its journal; the crawl's keys are then lost and the crawl is seeded again
// under its name; the killed worker's journal belongs to the earlier crawl
// and is not replayed into the new one (its job numbers name other URLs
// now: 12 URLs never fetched were marked done, their rows naming other
// URLs' bodies).
func TestJournalOfAnEarlierCrawl(t *testing.T) {
	rdb, cfg := journalOfAKilledRun(t, "reseeded")
	ctx := context.Background()
	if err := rdb.FlushAll(ctx).Err(); err != nil { // the crawl's keys lost
		t.Fatal(err)
	}
	seeder := newStore(t, rdb, fr.Config{Crawl: "reseeded", LeaseTTL: 10 * time.Second})
	jobs := sixURLs()
	slices.Reverse(jobs) // seeded again: the same URLs, other numbers
	if _, err := seeder.Push(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	again, err := fr.New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	c, err := again.Counts(ctx)
	if err != nil || c.Total() != 6 || c.Done != 0 || c.Queued != 6 {
		t.Fatalf("Counts once the old journal was opened = %+v, %v; want the new crawl's 6 URLs all queued", c, err)
	}
}

// TestBytesPerURL measures what a queued URL costs in Redis: used_memory
// before and after pushing 20,000 URLs of 50-odd bytes over 10 hosts.
//
//	go test -run BytesPerURL -v ./frontier/redis
func TestBytesPerURL(t *testing.T) {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	s := newStore(t, rdb, fr.Config{Crawl: "bytes"})
	used := func() int64 {
		info, err := rdb.Info(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, line := range strings.Split(info, "\n") {
			fmt.Sscanf(strings.TrimSpace(line), "used_memory:%d", &n)
		}
		return n
	}
	before := used()
	const n = 20000
	var jobs []frontier.NewJob
	for i := range n {
		jobs = append(jobs, frontier.NewJob{URL: fmt.Sprintf("https://shop%d.example.com/product/%07d", i%10, i)})
	}
	if added, err := s.Push(ctx, jobs); err != nil || added != n {
		t.Fatalf("Push = %d, %v", added, err)
	}
	per := float64(used()-before) / n
	t.Logf("%.0f bytes of Redis memory per queued URL (%d-byte URLs, dedupe key included)", per, len(jobs[0].URL))
	if per > 600 {
		t.Errorf("%.0f bytes per queued URL, want under 600", per)
	}
}

// TestCrawlGone: the crawl's keys vanish from Redis mid-crawl (a restart
// without persistence, a FLUSHALL): the Store says so (ErrCrawlGone) on
// Ready, Counts and a settle, where an empty frontier read as finished and
// a worker exited 0 with a quarter of its URLs never fetched. A Store of
// another crawl that never saw its keys reads an empty frontier as empty.
func TestCrawlGone(t *testing.T) {
	t.Run("no journal", func(t *testing.T) { testCrawlGone(t, "") })
	// With a journal (every worker of the command keeps one), lost keys
	// were read as an outage: the worker journaled, found Redis "back",
	// and read the keys gone again every keep-alive, for good.
	t.Run("journal", func(t *testing.T) { testCrawlGone(t, filepath.Join(t.TempDir(), "journal")) })
}

func testCrawlGone(t *testing.T, journal string) {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	s := newStore(t, rdb, fr.Config{Journal: journal, KeepAlive: journal != "", LeaseTTL: 300 * time.Millisecond})
	if _, err := s.Push(ctx, []frontier.NewJob{{URL: "http://a.example/1"}, {URL: "http://a.example/2"}}); err != nil {
		t.Fatal(err)
	}
	js, err := s.Claim(ctx, time.Now(), 1, nil)
	if err != nil || len(js) != 1 {
		t.Fatalf("Claim = %d jobs, %v", len(js), err)
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ready(ctx, time.Now(), 1); !errors.Is(err, fr.ErrCrawlGone) {
		t.Errorf("Ready after the keys vanished: %v, want ErrCrawlGone", err)
	}
	time.Sleep(250 * time.Millisecond) // a keep-alive or two
	if _, err := s.Ready(ctx, time.Now(), 1); !errors.Is(err, fr.ErrCrawlGone) {
		t.Errorf("Ready again, after a keep-alive: %v, want ErrCrawlGone", err)
	}

	if _, err := s.Counts(ctx); !errors.Is(err, fr.ErrCrawlGone) {
		t.Errorf("Counts after the keys vanished: %v, want ErrCrawlGone", err)
	}
	if err := s.Complete(ctx, js[0].Lease(), frontier.Result{Status: 200}); !errors.Is(err, fr.ErrCrawlGone) {
		t.Errorf("Complete after the keys vanished: %v, want ErrCrawlGone", err)
	}
	other := newStore(t, rdb, fr.Config{})
	if ready, err := other.Ready(ctx, time.Now(), 1); err != nil || len(ready.Hosts) != 0 {
		t.Errorf("a crawl never seen: Ready = %+v, %v; want empty, no error", ready, err)
	}
	if c, err := other.Counts(ctx); err != nil || c.Total() != 0 {
		t.Errorf("a crawl never seen: Counts = %+v, %v; want empty, no error", c, err)
	}
}

// TestExpiredLeases: leases a stopped worker held are counted apart once
// they run out (status showed them leased, as if being fetched), and a
// claim takes them back.
func TestExpiredLeases(t *testing.T) {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	s := newStore(t, rdb, fr.Config{LeaseTTL: time.Minute})
	if _, err := s.Push(ctx, []frontier.NewJob{{URL: "http://a.example/1"}, {URL: "http://a.example/2"}, {URL: "http://b.example/1"}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	js, err := s.Claim(ctx, now, 3, nil)
	if err != nil || len(js) != 3 {
		t.Fatalf("Claim = %d jobs, %v", len(js), err)
	}
	if n, err := s.ExpiredLeases(ctx, now.Add(30*time.Second)); n != 0 || err != nil {
		t.Errorf("ExpiredLeases within the lease = %d, %v; want 0", n, err)
	}
	if n, err := s.ExpiredLeases(ctx, now.Add(2*time.Minute)); n != 3 || err != nil {
		t.Errorf("ExpiredLeases past the lease = %d, %v; want 3", n, err)
	}
	if taken, err := s.Claim(ctx, now.Add(2*time.Minute), 1, func(h string) bool { return h == "b.example" }); err != nil || len(taken) != 1 {
		t.Fatalf("a claim past the lease = %d jobs, %v", len(taken), err)
	}
	if n, err := s.ExpiredLeases(ctx, now.Add(2*time.Minute)); n != 2 || err != nil {
		t.Errorf("ExpiredLeases after a claim took one back = %d, %v; want 2", n, err)
	}
}

// TestHostKeysGone: a host's keys lost alone (evicted, a cluster shard
// lost) are said so when one of its jobs is settled (it read "job not
// found"), still an ErrNotFound.
func TestHostKeysGone(t *testing.T) {
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	s := newStore(t, rdb, fr.Config{Crawl: "hostgone"})
	if _, err := s.Push(ctx, []frontier.NewJob{{URL: "http://a.example/1"}, {URL: "http://b.example/1"}}); err != nil {
		t.Fatal(err)
	}
	js, err := s.Claim(ctx, time.Now(), 2, nil)
	if err != nil || len(js) != 2 {
		t.Fatalf("Claim = %d, %v", len(js), err)
	}
	keys, err := rdb.Keys(ctx, "eg:{hostgone|a.example}:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("host a's keys: %v, %v", keys, err)
	}
	rdb.Del(ctx, keys...)
	for _, j := range js {
		err := s.Complete(ctx, j.Lease(), frontier.Result{Status: 200})
		switch j.Host {
		case "a.example":
			if !errors.Is(err, frontier.ErrNotFound) || !strings.Contains(err.Error(), "keys of host a.example are gone") {
				t.Errorf("Complete of a job of the lost host: %v, want it said", err)
			}
		default:
			if err != nil {
				t.Errorf("Complete of b's job: %v", err)
			}
		}
	}
}

// TestCloseSaysJournaled: a Store closed while Redis is away tries its
// journal once more, and says what it keeps there and where: other workers
// fetch those URLs again unless this worker runs again first (a worker
// stopped during an outage said nothing of it).
func TestCloseSaysJournaled(t *testing.T) {
	r, rdb := outageRedis(t)
	ctx := context.Background()
	var log syncbuf.Buffer
	journal := filepath.Join(t.TempDir(), "journal")
	s, err := fr.New(rdb, fr.Config{Crawl: "closing", LeaseTTL: 10 * time.Second, KeepAlive: true, Journal: journal,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Push(ctx, []frontier.NewJob{{URL: "http://a.example/1"}, {URL: "http://a.example/2"}}); err != nil {
		t.Fatal(err)
	}
	js, err := s.Claim(ctx, time.Now(), 2, nil)
	if err != nil || len(js) != 2 {
		t.Fatalf("Claim = %d, %v", len(js), err)
	}
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, j := range js {
		if err := s.Complete(ctx, j.Lease(), frontier.Result{Status: 200}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	s.Close()
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Close took %v, want its replay bounded", took)
	}
	if !strings.Contains(log.String(), "journaled, not yet in Redis") || !strings.Contains(log.String(), "entries=2") || !strings.Contains(log.String(), journal) {
		t.Errorf("Close with 2 settles journaled said:\n%s", log.String())
	}
}
