package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	redisfr "github.com/exitgate/exitgate/frontier/redis"
	"github.com/exitgate/exitgate/internal/peers"
	"github.com/exitgate/exitgate/internal/peertest"
)

// redisPid is the pid of the redis-server at addr, from its INFO.
func redisPid(t *testing.T, addr string) int {
	t.Helper()
	rdb := goredis.NewClient(&goredis.Options{Addr: addr})
	defer rdb.Close()
	info, err := rdb.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, _ := strconv.Atoi(v)
			return pid
		}
	}
	t.Fatal("no process_id in INFO server")
	return 0
}

// fetchedTwice counts the URLs nginx answered 200 more than once.
func (fr *fleetRun) fetchedTwice() (twice, distinct int) {
	time.Sleep(200 * time.Millisecond)
	seen := map[string]int{}
	log := fr.nginx.AccessLog(fr.t, 0)
	for _, e := range log {
		if e.Status == 200 {
			if seen[e.Request]++; seen[e.Request] == 2 {
				twice++
			}
		}
	}
	for _, e := range log {
		if seen[e.Request] > 1 {
			fr.t.Logf("twice: %s %s %s %d", e.Time.Format("15:04:05.000"), e.RemoteAddr, e.Request, e.Status)
		}
	}
	return twice, len(seen)
}

func redisCLI(t *testing.T, addr string, args ...string) string {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// faultTTL: the short leases of TestRedisFaults' workers, so that an outage
// of seconds outlasts them.
var faultTTL = []string{"--lease-ttl", "6s", "--fleet-ttl", "3s"}

// faultFleet starts the fleet of TestRedisFaults on Redis at redisURL: 3
// workers with short leases over 6 exits (from 127.0.0.bind) and urls
// URLs.
func faultFleet(t *testing.T, redisURL string, urls, bind int) *fleetRun {
	fr := newFleetRun(t, redisURL, 6, urls, bind)
	for i := range 3 {
		fr.start(i, faultTTL...)
	}
	return fr
}

// checkOnce checks that no URL was fetched twice and that the workers kept
// the limits (check).
func (fr *fleetRun) checkOnce(workers []int) {
	twice, n := fr.fetchedTwice()
	fr.t.Logf("%d URLs fetched, %d twice", n, twice)
	fr.check(0.05, workers)
	if twice > 0 {
		fr.t.Errorf("%d URLs fetched twice", twice)
	}
}

// TestRedisFaults runs a fleet of 3 workers (6 exits, 400 URLs, short
// leases) through Redis faults the outage tests do not cover: Redis
// frozen (SIGSTOP: connections hang, calls time out), its keys flushed,
// its scripts flushed, a worker killed while Redis is away and run again,
// and workers racing to seed a new crawl.
func TestRedisFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("real peers, about two minutes")
	}
	t.Run("Freeze", testFaultFreeze)
	t.Run("Flush", testFaultFlush)
	t.Run("ScriptFlush", testFaultScriptFlush)
	t.Run("KillDuringOutage", testFaultKillDuringOutage)
	t.Run("SeedRace", testFaultSeedRace)
}

// testFaultFreeze: Redis stopped 12 s, longer than the lease TTL, then
// resumed. Workers journal meanwhile and replay; a job finished while the
// journal was being replayed was journaled behind the replay and left there,
// its lease no longer kept, and fetched again (1-2 of 400 URLs).
func testFaultFreeze(t *testing.T) {
	r := peertest.StartRedisWith(t, peers.RedisConfig{AppendOnly: true})
	fr := faultFleet(t, r.URL(), 400, 131)
	pid := redisPid(t, r.Addr())
	time.Sleep(5 * time.Second)
	syscall.Kill(pid, syscall.SIGSTOP)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	time.Sleep(12 * time.Second)
	syscall.Kill(pid, syscall.SIGCONT)
	fr.wait(50 * time.Second)
	fr.checkOnce([]int{0, 1, 2})
}

// testFaultFlush: FLUSHALL mid-run. Every worker stops with exit 1 and
// says the crawl's keys are gone, without telling to resume what is gone;
// one run again seeds the crawl anew and says what that means (it re-fetched
// what was done without a word).
func testFaultFlush(t *testing.T) {
	r := peertest.StartRedis(t)
	fr := faultFleet(t, r.URL(), 400, 141)
	time.Sleep(6 * time.Second)
	redisCLI(t, r.Addr(), "FLUSHALL")
	deadline := time.After(40 * time.Second)
	for i, d := range fr.done {
		select {
		case err := <-d:
			var ee *exec.ExitError
			out := fr.outs[i].String()
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, "keys are gone from Redis") ||
				strings.Contains(out, "Run the same command again to resume") || !strings.Contains(out, "The crawl's queue is gone from Redis") {
				t.Errorf("worker %d after the flush: %v, want exit 1 saying the keys are gone, and what running again does:\n%s", i, err, out)
			}
		case <-deadline:
			t.Fatalf("worker %d still running 40 s after the flush:\n%s", i, fr.outs[i])
		}
	}
	twice, n := fr.fetchedTwice()
	t.Logf("%d URLs fetched, %d twice", n, twice)
	fr.start(0, append(faultTTL, "--duration", "2s")...) // the same command again
	select {
	case <-fr.done[3]:
	case <-time.After(40 * time.Second):
		t.Fatalf("worker 0 run again: still running 40 s on\n%s", fr.outs[3])
	}
	if !strings.Contains(fr.outs[3].String(), "warning: this --out was a worker's of crawl \"c\" before, but Redis holds nothing of it") {
		t.Errorf("worker 0 run again after the flush seeded the crawl anew without a word:\n%s", fr.outs[3])
	}
}

// testFaultScriptFlush: SCRIPT FLUSH four times mid-run (NOSCRIPT on
// every script's next call).
func testFaultScriptFlush(t *testing.T) {
	r := peertest.StartRedis(t)
	fr := faultFleet(t, r.URL(), 400, 151)
	for range 4 {
		time.Sleep(3 * time.Second)
		redisCLI(t, r.Addr(), "SCRIPT", "FLUSH")
	}
	fr.wait(50 * time.Second)
	fr.checkOnce([]int{0, 1, 2})
}

// testFaultSeedRace: three workers started at once on a new crawl, each
// with the URL file.
func testFaultSeedRace(t *testing.T) {
	r := peertest.StartRedis(t)
	fr := newFleetRun(t, r.URL(), 6, 150, 161) // (the race is at the seeding: a short crawl after it)
	for i := range 3 {
		fr.start(i)
	}
	fr.wait(50 * time.Second)
	fr.checkOnce([]int{0, 1, 2})
}

// testFaultKillDuringOutage: Redis killed, the worker that journaled most
// killed with SIGKILL meanwhile, Redis restarted and the worker run again
// with its command: what it journaled is replayed once, none of it fetched
// again.
func testFaultKillDuringOutage(t *testing.T) {
	r := peertest.StartRedisWith(t, peers.RedisConfig{AppendOnly: true})
	fr := faultFleet(t, r.URL(), 400, 171)
	time.Sleep(5 * time.Second)
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	// The worker with the most journaled is killed.
	victim, most := -1, int64(0)
	for i := range 3 {
		fi, err := os.Stat(filepath.Join(fr.dir, fmt.Sprintf("w%d", i), "journal-c.jsonl"))
		if err == nil && fi.Size() > most {
			victim, most = i, fi.Size()
		}
	}
	if victim < 0 {
		t.Fatal("no worker journaled anything")
	}
	syscall.Kill(fr.workers[victim].Process.Pid, syscall.SIGKILL)
	<-fr.done[victim]
	fr.done[victim] = make(chan error, 1)
	fr.done[victim] <- nil
	journal, _ := os.ReadFile(filepath.Join(fr.dir, fmt.Sprintf("w%d", victim), "journal-c.jsonl"))
	var ids []int64
	for _, line := range strings.Split(string(journal), "\n") {
		var e struct {
			Op string `json:"op"`
			ID int64  `json:"id"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Op == "done" {
			ids = append(ids, e.ID)
		}
	}
	t.Logf("worker %d killed with %d completions journaled", victim, len(ids))
	time.Sleep(3 * time.Second)
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	fr.start(victim, faultTTL...)
	again := len(fr.workers) - 1
	fr.wait(50 * time.Second)
	if fr.logs != "" {
		time.Sleep(200 * time.Millisecond)
		fr.keepLogs("kill-outage", fr.nginx.AccessLog(t, 0))
	}
	if !strings.Contains(fr.outs[again].String(), "400 in the frontier") {
		t.Logf("worker %d again:\n%s", victim, fr.outs[again])
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	defer rdb.Close()
	st, err := redisfr.New(rdb, redisfr.Config{Crawl: "c"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	time.Sleep(200 * time.Millisecond)
	seen := map[string]int{}
	for _, e := range fr.nginx.AccessLog(t, 0) {
		if e.Status == 200 {
			seen[e.Request]++
		}
	}
	for _, id := range ids {
		j, err := st.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		path := j.URL[strings.Index(j.URL[8:], "/")+8:]
		if c := seen["GET "+path+" HTTP/1.1"]; c != 1 {
			t.Errorf("%s (journaled done by the killed worker) fetched %d times", j.URL, c)
		}
	}
	twice, n := fr.fetchedTwice()
	t.Logf("%d URLs fetched, %d twice", n, twice)
	alive := []int{}
	for i := range 3 {
		if i != victim {
			alive = append(alive, i)
		}
	}
	fr.check(0.05, append(alive, victim))
}
