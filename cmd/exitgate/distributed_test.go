package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/exitgate/exitgate/fleet"
	"github.com/exitgate/exitgate/internal/peers"
	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/internal/syncbuf"
	"github.com/exitgate/exitgate/report"
)

// fleetRun is a distributed crawl on loopback: nginx limiting each client
// address, tinyproxy exits bound to their own addresses, a Redis, and
// worker processes of the real exitgate binary.
type fleetRun struct {
	t       *testing.T
	bin     string
	dir     string
	redis   string
	nginx   *peertest.Nginx
	proxies string
	urls    string
	n       int
	// logs is EXITGATE_FLEET_LOGS: when set, the workers log at debug
	// level (every learning decision) and keepLogs writes their outputs
	// and the server's log there.
	logs string
	// laneRate is the workers' --lane-rate (the first guess); empty: the
	// default.
	laneRate string
	workers  []*exec.Cmd
	outs     []*syncbuf.Buffer
	done     []chan error
}

const fleetRate, fleetBurst = 5, 5 // nginx limit per exit: 5 r/s, burst 5

func newFleetRun(t *testing.T, redisURL string, exits, urls int, bindBase int) *fleetRun {
	t.Helper()
	fr := newFleetRunWith(t, redisURL, exits, urls, bindBase, peertest.NginxConfig{Rate: fmt.Sprintf("%dr/s", fleetRate), Burst: fleetBurst,
		NoRetryAfter: true})
	fr.laneRate = "4/s"
	return fr
}

// newFleetRunWith is newFleetRun against an nginx limited as nc says (its
// Fallback and files are set here), the workers on default flags.
func newFleetRunWith(t *testing.T, redisURL string, exits, urls int, bindBase int, nc peertest.NginxConfig) *fleetRun {
	t.Helper()
	fr := &fleetRun{t: t, bin: exitgateBinary(t), dir: t.TempDir(), redis: redisURL, n: urls, logs: os.Getenv("EXITGATE_FLEET_LOGS")}
	nc.Fallback, nc.Files = "page.txt", map[string]string{"page.txt": "hello\n"}
	fr.nginx = peertest.StartNginx(t, nc)
	var lines []string
	for i := range exits {
		p := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: fmt.Sprintf("127.0.0.%d", bindBase+i)})
		lines = append(lines, p.URL())
	}
	fr.proxies = filepath.Join(fr.dir, "proxies.txt")
	os.WriteFile(fr.proxies, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	var u strings.Builder
	for i := range urls {
		fmt.Fprintf(&u, "%s/p/%d\n", fr.nginx.URL(), i)
	}
	fr.urls = filepath.Join(fr.dir, "urls.txt")
	os.WriteFile(fr.urls, []byte(u.String()), 0o644)
	return fr
}

// start starts worker i with the common flags and extra ones.
func (fr *fleetRun) start(i int, extra ...string) {
	args := []string{"crawl", "--redis", fr.redis, "--crawl", "c", "--proxies", fr.proxies,
		"--ignore-robots", "--progress", "0", "--timeout", "5s", "--worker-id", fmt.Sprintf("w%d", i),
		"--out", filepath.Join(fr.dir, fmt.Sprintf("w%d", i))}
	if fr.laneRate != "" {
		args = append(args, "--lane-rate", fr.laneRate)
	}
	// At info level the output a failing test prints says what each
	// worker's fleet did and, in a stall, what held its work (the engine's
	// stall line is info when a wait explains it).
	level := "info"
	if fr.logs != "" {
		level = "debug"
	}
	args = append(args, "--log-level", level)
	args = append(args, extra...)
	args = append(args, fr.urls)
	cmd := exec.Command(fr.bin, args...)
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		fr.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	fr.workers, fr.outs, fr.done = append(fr.workers, cmd), append(fr.outs, out), append(fr.done, done)
	fr.t.Cleanup(func() {
		_ = cmd.Process.Kill() // our own child, by its pid
	})
}

// stopped waits for every worker to end by itself (a --duration run ends
// with exit 4, unfinished), whatever its exit code.
func (fr *fleetRun) stopped(timeout time.Duration) {
	fr.t.Helper()
	deadline := time.After(timeout)
	for _, d := range fr.done {
		select {
		case <-d:
		case <-deadline:
			fr.t.Fatal("workers did not stop")
		}
	}
}

// wait waits for every worker that was not killed, failing on a non-zero
// exit.
func (fr *fleetRun) wait(timeout time.Duration, killed ...int) {
	fr.t.Helper()
	deadline := time.After(timeout)
	for i, d := range fr.done {
		select {
		case err := <-d:
			if err != nil && !contains(killed, i) {
				fr.t.Fatalf("worker %d: %v\n%s", i, err, fr.outs[i])
			}
		case <-deadline:
			// What the fleet held, read before the workers go: a stall's
			// cause is in Redis (whose leases, which hosts the schedule
			// says are due, each host's shared pace and pause).
			fr.t.Logf("the crawl's state in Redis at %s:\n%s", time.Now().Format("15:04:05.000"), fr.redisState())
			for j, w := range fr.workers {
				_ = w.Process.Signal(syscall.SIGQUIT) // a goroutine dump in its output
				time.Sleep(500 * time.Millisecond)
				_ = w.Process.Kill()
				fr.t.Logf("worker %d output:\n%s", j, fr.outs[j])
			}
			fr.t.Fatalf("workers still running after %v", timeout)
		}
	}
}

// redisState lists the crawl's keys in Redis and what each holds (a few
// hundred jobs: every entry), for a failing run's log.
func (fr *fleetRun) redisState() string {
	opt, err := goredis.ParseURL(fr.redis)
	if err != nil {
		return err.Error()
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		return err.Error()
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		var v any
		switch typ, _ := rdb.Type(ctx, k).Result(); typ {
		case "hash":
			v, err = rdb.HGetAll(ctx, k).Result()
		case "zset":
			v, err = rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
		case "list":
			v, err = rdb.LRange(ctx, k, 0, -1).Result()
		case "string":
			v, err = rdb.Get(ctx, k).Result()
		default:
			v = typ
		}
		if err != nil {
			v = err
		}
		fmt.Fprintf(&b, "%s: %v\n", k, v)
	}
	return b.String()
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// check verifies what the server saw and what the workers wrote: every URL
// exactly once in the results, the 429 ratio, and each exit's rate within
// nginx's limit.
func (fr *fleetRun) check(maxRatio float64, alive []int) (requests, n429 int) {
	t := fr.t
	t.Helper()
	time.Sleep(200 * time.Millisecond) // nginx logs just after it answers
	log := fr.nginx.AccessLog(t, 0)
	perExit := map[string][]time.Time{}
	for _, e := range log {
		requests++
		switch e.Status {
		case 429:
			n429++
		case 200:
			perExit[e.RemoteAddr] = append(perExit[e.RemoteAddr], e.Time)
		}
	}
	t.Logf("nginx saw %d 429s in %d requests", n429, requests)
	if r := float64(n429) / float64(max(requests, 1)); r > maxRatio {
		t.Errorf("nginx saw %d 429s in %d requests (%.2f%%), want at most %.1f%%", n429, requests, 100*r, 100*maxRatio)
	}
	withinLimit(t, perExit)
	// Each surviving worker's results hold the whole crawl, each URL once.
	for _, i := range alive {
		seen := map[string]int{}
		f, err := os.Open(filepath.Join(fr.dir, fmt.Sprintf("w%d", i), "results.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var r report.Result
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("worker %d results: %v", i, err)
			}
			if r.Outcome != "done" {
				t.Errorf("worker %d: %s %s (%s)", i, r.URL, r.Outcome, r.Reason)
			}
			seen[r.URL]++
		}
		f.Close()
		if len(seen) != fr.n {
			t.Errorf("worker %d results: %d distinct URLs, want %d", i, len(seen), fr.n)
		}
		for u, c := range seen {
			if c != 1 {
				t.Errorf("worker %d results: %s %d times, want once", i, u, c)
			}
		}
	}
	return requests, n429
}

// withinLimit fails t when an exit passed more requests in some span than
// nginx's leaky bucket (fleetRate, fleetBurst) lets through: at most
// burst+1 + rate·span (and one for the log's timing). perExit holds the
// times of each exit's 200s, in order.
func withinLimit(t *testing.T, perExit map[string][]time.Time) {
	t.Helper()
	for exit, ts := range perExit {
		for i := range ts {
			for j := i; j < len(ts) && ts[j].Sub(ts[i]) <= 2*time.Second; j++ {
				if n := j - i + 1; float64(n) > fleetBurst+1+fleetRate*ts[j].Sub(ts[i]).Seconds()+1 {
					t.Fatalf("exit %s passed %d requests in %v: above nginx's %d r/s with burst %d", exit, n, ts[j].Sub(ts[i]), fleetRate, fleetBurst)
				}
			}
		}
	}
}

// TestDistributed runs the fleet on real peers: three workers sharing ten
// exits; a worker killed with SIGKILL mid-run; Redis killed and restarted
// mid-run; a 3-master Redis Cluster.
func TestDistributed(t *testing.T) {
	if testing.Short() {
		t.Skip("real peers, about a minute")
	}
	t.Run("ThreeWorkers", func(t *testing.T) {
		r := peertest.StartRedis(t)
		fr := newFleetRun(t, r.URL(), 10, 600, 71)
		for i := range 3 {
			fr.start(i)
		}
		fr.wait(90 * time.Second)
		if fr.logs != "" {
			time.Sleep(200 * time.Millisecond)
			fr.keepLogs("three", fr.nginx.AccessLog(t, 0))
		}
		// The bound: one worker leads the host's search, and
		// the explorer's learning 429s on a 600-URL crawl are 2-4 (a
		// follower pace above the rate let seven followers draw a 429
		// at once, 2.1%, before the first careful run after a 429 was
		// held to what passed since it).
		req, n429 := fr.check(0.01, []int{0, 1, 2})
		for i := range 3 {
			for _, line := range strings.Split(fr.outs[i].String(), "\n") {
				if strings.HasPrefix(line, "Redis:") {
					t.Logf("worker %d: %s", i, line)
				}
			}
		}
		info, _ := goredis.NewClient(&goredis.Options{Addr: r.Addr()}).Info(context.Background(), "stats").Result()
		cmds := 0
		for _, line := range strings.Split(info, "\n") {
			fmt.Sscanf(strings.TrimSpace(line), "total_commands_processed:%d", &cmds)
		}
		t.Logf("3 workers, 10 exits, 600 URLs: %d requests, %d 429s; Redis processed %d commands (%.2f per request, heartbeats and refreshes included)",
			req, n429, cmds, float64(cmds)/float64(max(req, 1)))
	})
	t.Run("KillWorker", func(t *testing.T) {
		r := peertest.StartRedis(t)
		rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
		defer rdb.Close()
		fr := newFleetRun(t, r.URL(), 6, 400, 81)
		ttl := []string{"--lease-ttl", "3s", "--fleet-ttl", "2s"}
		for i := range 3 {
			fr.start(i, ttl...)
		}
		ctx := context.Background()
		// Kill w2 once it owns exits and has work in hand (the time its
		// exits take to move means nothing for a worker that owns none).
		waitUntil(t, 30*time.Second, func() bool {
			ms, _ := fleet.Status(ctx, rdb, "c")
			for _, m := range ms {
				if m.ID == "w2" && len(m.Exits) > 0 {
					return len(ms) == 3
				}
			}
			return false
		})
		time.Sleep(2 * time.Second) // let it claim and send
		syscall.Kill(fr.workers[2].Process.Pid, syscall.SIGKILL)
		killed := time.Now()
		var moved time.Duration
		waitUntil(t, 20*time.Second, func() bool {
			ms, _ := fleet.Status(ctx, rdb, "c")
			n := 0
			for _, m := range ms {
				if m.ID != "w2" {
					n += len(m.Exits)
				}
			}
			moved = time.Since(killed)
			return n == 6
		})
		t.Logf("the dead worker's exits moved in %v (fleet TTL 2s)", moved.Round(10*time.Millisecond))
		if moved > 4*time.Second {
			t.Errorf("exits moved %v after the kill, want within the fleet TTL and a heartbeat", moved)
		}
		fr.wait(90*time.Second, 2)
		// Alone it draws under 2%; under the whole suite's load 2.2-2.9%
		// (2026-12-01: 9-12 in ~410), the learning of three explorers and
		// a restored one on a 400-URL crawl at 5 r/s per exit.
		fr.check(0.03, []int{0, 1})
	})
	t.Run("RedisRestart", func(t *testing.T) {
		fr := fleetThroughOutage(t, 400, 3*time.Second)
		fr.wait(60 * time.Second)
		if fr.logs != "" {
			time.Sleep(200 * time.Millisecond)
			fr.keepLogs("restart", fr.nginx.AccessLog(t, 0))
		}
		// The bound on bursts is check's window test on every exit; the
		// 429s allowed here are the learning of three explorers on a
		// short crawl (the outage itself adds none: its fallback paces
		// each lane as before). Alone it draws under 3%; under the whole
		// suite's load one run drew 16 in 416 (3.85%, 2026-12-01), late
		// answers pushing lanes at a 5 r/s limit with no slack.
		fr.check(0.05, []int{0, 1, 2})
		for i := range 3 {
			if !strings.Contains(fr.outs[i].String(), "Redis is back") {
				t.Logf("worker %d output:\n%s", i, fr.outs[i])
			}
		}
	})
	t.Run("Cluster", func(t *testing.T) {
		c := peertest.StartRedisCluster(t, 3)
		fr := newFleetRun(t, "redis://"+c.Addrs()[0], 4, 200, 101)
		for i := range 2 {
			fr.start(i)
		}
		fr.wait(60 * time.Second)
		// Two workers, two explorers learning one host: a short crawl's
		// learning shows (the README's figures say how much).
		fr.check(0.05, []int{0, 1})
	})
}

func waitUntil(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFleetSlowLimit runs a fleet against a per-minute limit, where a
// search's every 429 costs a lane's Retry-After and a follower's hold-back
// decides whether it is pushed back: nginx at 6 requests a minute per
// client address, no burst, a fixed Retry-After of 10 s, 10 exits, the
// workers on default flags (the first guess, 30/min, is five times the
// limit), 120 s: 3 workers of one --redis crawl and 1 worker. It reports
// utilization after the first minute and over the run, and the 429 ratio,
// from nginx's log. Not part of the suite (four minutes):
//
//	EXITGATE_FLEET_BENCH=1 go test -run FleetSlowLimit -v ./cmd/exitgate
//
// With EXITGATE_FLEET_LOGS=DIR the workers run with --log-level debug (every
// learning decision) and each run's worker outputs and nginx log are kept in
// DIR (w<workers>-<i>.log, nginx-<workers>.log).
func TestFleetSlowLimit(t *testing.T) {
	if os.Getenv("EXITGATE_FLEET_BENCH") != "1" {
		t.Skip("set EXITGATE_FLEET_BENCH=1")
	}
	const exits, dur, rate = 10, 120 * time.Second, 0.1 // 6 per minute per exit
	for _, workers := range []int{3, 1} {
		r := peertest.StartRedis(t)
		fr := newFleetRunWith(t, r.URL(), exits, 5000, 121, peertest.NginxConfig{Rate: "6r/m", RetryAfter: "10"})
		for i := range workers {
			fr.start(i, "--duration", dur.String())
		}
		fr.stopped(dur + 30*time.Second)
		time.Sleep(200 * time.Millisecond)
		log := fr.nginx.AccessLog(t, 0)
		if len(log) == 0 {
			t.Fatal("nginx logged nothing")
		}
		if fr.logs != "" {
			fr.keepLogs(fmt.Sprint(workers), log)
		}
		t0 := log[0].Time
		ok, ok60, n429 := 0, 0, 0
		for _, e := range log {
			switch e.Status {
			case 200:
				ok++
				if e.Time.Sub(t0) >= time.Minute {
					ok60++
				}
			case 429:
				n429++
			}
		}
		span := min(log[len(log)-1].Time.Sub(t0), dur).Seconds()
		whole := float64(ok) / (rate * exits * span)
		after := float64(ok60) / (rate * exits * (span - 60))
		t.Logf("%d worker(s), nginx 6r/m, %d exits, %.0f s: %d requests, %d ok, utilization %.1f%% (after 60 s %.1f%%), 429s %d (%.2f%%)",
			workers, exits, span, len(log), ok, 100*whole, 100*after, n429, 100*float64(n429)/float64(len(log)))
	}
}

// fleetThroughOutage starts 3 workers of one crawl of urls URLs on 6 exits
// against a Redis with its append-only file, kills Redis with SIGKILL 4 s
// in and restarts it outage later; it returns the running fleet.
func fleetThroughOutage(t *testing.T, urls int, outage time.Duration) *fleetRun {
	t.Helper()
	r := peertest.StartRedisWith(t, peers.RedisConfig{AppendOnly: true})
	fr := newFleetRun(t, r.URL(), 6, urls, 91)
	for i := range 3 {
		fr.start(i)
	}
	time.Sleep(4 * time.Second)
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(outage)
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	return fr
}

// TestOutageDoubleFetches measures what a Redis outage longer than the
// lease TTL costs in URLs fetched twice: the suite's fleet (3 workers, 6
// tinyproxy exits, nginx 5 r/s per exit, 600 URLs), Redis (append-only)
// killed 4 s in and restarted after EXITGATE_OUTAGE (default 20s); it
// reports the URLs nginx answered 200 more than once. Not part of the suite
// (a minute, and a figure rather than a floor):
//
//	EXITGATE_FLEET_BENCH=1 go test -run OutageDoubleFetches -v ./cmd/exitgate
func TestOutageDoubleFetches(t *testing.T) {
	if os.Getenv("EXITGATE_FLEET_BENCH") != "1" {
		t.Skip("set EXITGATE_FLEET_BENCH=1")
	}
	outage := 20 * time.Second
	if d, err := time.ParseDuration(os.Getenv("EXITGATE_OUTAGE")); err == nil {
		outage = d
	}
	fr := fleetThroughOutage(t, 600, outage)
	fr.wait(90 * time.Second)
	time.Sleep(200 * time.Millisecond) // nginx logs just after it answers
	log := fr.nginx.AccessLog(t, 0)
	seen := map[string]int{}
	twice := 0
	for _, e := range log {
		if e.Status == 200 {
			if seen[e.Request]++; seen[e.Request] == 2 {
				twice++
			}
		}
	}
	t.Logf("outage %v: %d requests, %d URLs fetched, %d of them more than once", outage, len(log), len(seen), twice)
}

// keepLogs writes a fleet run's worker outputs and its server's log
// (time, client address, status) to fr.logs, named for the run.
func (fr *fleetRun) keepLogs(run string, log []peers.AccessEntry) {
	t, dir := fr.t, fr.logs
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, o := range fr.outs {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("w%s-%d.log", run, i)), []byte(o.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	for _, e := range log {
		fmt.Fprintf(&b, "%s %s %d\n", e.Time.Format("15:04:05.000"), e.RemoteAddr, e.Status)
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("nginx-%s.log", run)), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("kept the workers' and nginx's logs in %s", dir)
}

// TestFleetVersusPerWorker is the seed article's case on loopback: 8
// workers on 20 exits against nginx limiting each exit to 5 r/s, for 20 s
// each: 8 exitgate workers of one --redis crawl, 8 independent exitgate
// processes (each its own limiter over the whole pool), and 1 worker. It
// reports utilization (successes over what nginx allowed the pool) and the
// 429 ratio from nginx's log (EXITGATE_FLEET_DURATION=60s for longer runs).
// With EXITGATE_FLEET_LOGS=DIR the fleets' workers log at debug level and
// their outputs and nginx's log are kept in DIR, as TestFleetSlowLimit's;
// EXITGATE_FLEET_MODES=fleet-8,fleet-1 runs only the modes named.
// Not part of the suite (two minutes):
//
//	EXITGATE_FLEET_BENCH=1 go test -run FleetVersusPerWorker -v ./cmd/exitgate
func TestFleetVersusPerWorker(t *testing.T) {
	if os.Getenv("EXITGATE_FLEET_BENCH") != "1" {
		t.Skip("set EXITGATE_FLEET_BENCH=1")
	}
	const exits = 20
	dur := 20 * time.Second
	if v, err := time.ParseDuration(os.Getenv("EXITGATE_FLEET_DURATION")); err == nil && v > 0 {
		dur = v // a longer run: the first seconds' handovers weigh less
	}
	for _, mode := range []struct {
		name    string
		workers int
		redis   bool
	}{{"fleet-8", 8, true}, {"per-worker-8", 8, false}, {"fleet-1", 1, true}} {
		if only := os.Getenv("EXITGATE_FLEET_MODES"); only != "" && !slices.Contains(strings.Split(only, ","), mode.name) {
			continue
		}
		r := peertest.StartRedis(t)
		fr := newFleetRun(t, r.URL(), exits, 20000, 111)
		start := time.Now()
		for i := range mode.workers {
			extra := []string{"--duration", dur.String(), "--concurrency", "32"}
			if !mode.redis {
				// An independent crawl: no --redis, its own frontier.
				args := []string{"crawl", "--proxies", fr.proxies, "--ignore-robots", "--lane-rate", "4/s", "--progress", "0",
					"--out", filepath.Join(fr.dir, fmt.Sprintf("solo%d", i)), "--duration", dur.String(), fr.urls}
				cmd := exec.Command(fr.bin, args...)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				fr.workers, fr.outs, fr.done = append(fr.workers, cmd), append(fr.outs, &syncbuf.Buffer{}), append(fr.done, done)
				continue
			}
			fr.start(i, extra...)
		}
		fr.stopped(dur + 30*time.Second)
		span := time.Since(start)
		time.Sleep(200 * time.Millisecond)
		log := fr.nginx.AccessLog(t, 0)
		if fr.logs != "" && mode.redis {
			fr.keepLogs(fmt.Sprint(mode.workers), log)
		}
		ok, n429, req := 0, 0, 0
		var first, last time.Time
		for _, e := range log {
			req++
			if first.IsZero() {
				first = e.Time
			}
			last = e.Time
			switch e.Status {
			case 200:
				ok++
			case 429:
				n429++
			}
		}
		active := last.Sub(first).Seconds()
		util := float64(ok) / (exits * fleetRate * active)
		t.Logf("%-13s %d workers: %5d requests in %.1fs (wall %.1fs), %5d ok, utilization %.1f%%, 429s %.2f%%",
			mode.name, mode.workers, req, active, span.Seconds(), ok, 100*util, 100*float64(n429)/float64(max(req, 1)))
	}
}

// TestGainedExits: a worker marks the exits that came to it from another
// worker (limit.Exit.Since), never those of a lone first worker.
func TestGainedExits(t *testing.T) {
	t1, t2 := time.Unix(100, 0), time.Unix(200, 0)
	// The previous owner stopped a handover before letting go.
	last1, last2 := t1.Add(-fleet.DefaultHandover), t2.Add(-fleet.DefaultHandover)
	d := &distributed{}
	d.owned.Store(&[]string{})
	d.gained([]string{"a", "b"}, 1, t1) // alone: nobody used them
	d.owned.Store(&[]string{"a", "b"})
	d.gained([]string{"a", "b", "c"}, 2, t2)
	if len(d.since) != 1 || !d.since["c"].Equal(last2) {
		t.Errorf("seed worker gaining c: since %v, want only c at %v", d.since, last2)
	}
	d.owned.Store(&[]string{"a", "b", "c"})
	d.gained([]string{"c"}, 2, t2.Add(time.Second))
	if len(d.since) != 1 || !d.since["c"].Equal(last2) {
		t.Errorf("a and b given away: since %v, want c still at %v", d.since, last2)
	}
	j := &distributed{}
	j.owned.Store(&[]string{})
	j.gained([]string{"x", "y"}, 3, t1) // a joiner: the others used them
	if len(j.since) != 2 || !j.since["x"].Equal(last1) {
		t.Errorf("joiner: since %v, want x and y at %v", j.since, last1)
	}
}

// TestStatusNoSuchCrawl: status of a crawl Redis holds nothing of (a
// mistyped --crawl) says so and fails; it printed an empty crawl and exit 0.
func TestStatusNoSuchCrawl(t *testing.T) {
	r := peertest.StartRedis(t)
	_, msg, code := run(t, "status", "--redis", r.URL(), "--crawl", "typo-name")
	if code == 0 || !strings.Contains(msg, `no crawl "typo-name" in this Redis`) {
		t.Errorf("status of a crawl that is not there: exit %d %q, want an error naming it", code, msg)
	}
}

// TestDistributedInputsRefused: what a crawl of one process refuses, a
// distributed worker refuses too, with exit 2 before any work: a URL list
// other than the crawl's without --append (a joiner's other list was
// added without a word), an --out that holds another crawl's part (two
// crawls sharing one --out overwrote one's results and bodies), flags the
// workers share given otherwise, a --redis without a scheme (exit 1 before).
func TestDistributedInputsRefused(t *testing.T) {
	r := peertest.StartRedis(t)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") }))
	defer origin.Close()
	dir := t.TempDir()
	listA := writeLines(t, dir, "a.txt", []string{origin.URL + "/a1", origin.URL + "/a2"})
	listB := writeLines(t, dir, "b.txt", []string{origin.URL + "/b1"})
	outA, outB := filepath.Join(dir, "outA"), filepath.Join(dir, "outB")
	crawl := func(out, name, list string, extra ...string) (string, int) {
		args := append([]string{"crawl", "--redis", r.URL(), "--crawl", name, "--out", out, "-x", "direct",
			"--ignore-robots", "--progress", "0", "--fleet-ttl", "1s", "--lease-ttl", "3s"}, extra...)
		if list != "" {
			args = append(args, list)
		}
		_, msg, code := run(t, args...)
		return msg, code
	}
	if msg, code := crawl(outA, "lists", listA); code != 0 {
		t.Fatalf("the first worker: exit %d %s", code, msg)
	}
	// Its run counts in the crawl's status once it ended (the live
	// workers' total read 0).
	if out, msg, code := run(t, "status", "--redis", r.URL(), "--crawl", "lists"); code != 0 || !regexp.MustCompile(`every run \(1\)\s+[2-9]`).MatchString(out) {
		t.Errorf("status after the first worker ended: exit %d %s\n%s\nwant every run (1) with its 2 requests or more", code, msg, out)
	}
	if msg, code := crawl(outB, "lists", listB); code != 2 || !strings.Contains(msg, "other URLs than") {
		t.Errorf("a worker with another list: exit %d %q, want 2, refused", code, msg)
	}
	// A joiner's copy of the crawl's list made on another machine (CRLF,
	// another order) is that list (it was refused as another).
	copyA := filepath.Join(dir, "a-copy.txt")
	if err := os.WriteFile(copyA, []byte(origin.URL+"/a2\r\n"+origin.URL+"/a1\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, code := crawl(filepath.Join(dir, "outCopy"), "lists", copyA); code != 0 {
		t.Errorf("a worker with a copy of the list (CRLF, reversed): exit %d %s, want 0", code, msg)
	}
	if msg, code := crawl(outB, "lists", listB, "--append"); code != 0 {
		t.Errorf("the same with --append: exit %d %s", code, msg)
	}
	for _, bad := range [][]string{{"--lease-ttl", "1ms"}, {"--fleet-ttl", "1ns"}, {"--durable"}, {"--worker-id", "a\nb"}} {
		if msg, code := crawl(filepath.Join(dir, "outBad"), "lists", listA, bad...); code != 2 || !strings.Contains(msg, bad[0]) {
			t.Errorf("a worker with %v: exit %d %q, want 2 naming the flag (it was taken: a lease of 1 ms refetched URLs 27 times; --durable did nothing)", bad, code, msg)
		}
		if _, err := os.Stat(filepath.Join(dir, "outBad", "crawl.json")); err == nil {
			t.Errorf("a worker refused for %v marked its --out a worker's (the next run warned that Redis had lost the crawl)", bad)
		}
	}
	// A joiner whose shared flags differ from the live workers' is refused
	// before it writes anything in its --out (it had loaded the frontier
	// and written 10 result rows and crawl.json first). The live worker is
	// a member entry made by hand, alive for a minute, with its ceiling.
	rdbLive := goredis.NewClient(&goredis.Options{Addr: strings.TrimPrefix(r.URL(), "redis://")})
	defer rdbLive.Close()
	rdbLive.ZAdd(context.Background(), "eg:{lists}:members", goredis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: "ghost"})
	rdbLive.HSet(context.Background(), "eg:{lists}:pool", "set:--host-rate", "5/s")
	outLive := filepath.Join(dir, "outLive")
	if msg, code := crawl(outLive, "lists", listA); code != 2 || !strings.Contains(msg, "--host-rate") {
		t.Errorf("a joiner without the live workers' --host-rate: exit %d %q, want 2 naming it", code, msg)
	}
	if _, err := os.Stat(filepath.Join(outLive, "results.jsonl")); err == nil {
		t.Errorf("the refused joiner wrote results.jsonl in its --out") // (crawl.json marks the --out as this crawl's worker's)
	}
	rdbLive.ZRem(context.Background(), "eg:{lists}:members", "ghost")
	if msg, code := crawl(outA, "other", listB); code != 2 || !strings.Contains(msg, `distributed crawl "lists"`) {
		t.Errorf("another crawl's worker on lists's --out: exit %d %q, want 2, refused", code, msg)
	}
	if _, msg, code := run(t, "crawl", "--redis", strings.TrimPrefix(r.URL(), "redis://"), "--crawl", "x", "--out", filepath.Join(dir, "o"), listA); code != 2 || !strings.Contains(msg, "did you mean redis://") {
		t.Errorf("--redis without its scheme: exit %d %q, want 2 with a suggestion", code, msg)
	}
	// A list a worker began to load and none loaded whole (its worker
	// killed while loading; here marked so by hand): the crawl is not
	// done, whatever its queue says, and each worker says so; the
	// seeder's own command again loads the rest. A joiner crawled the
	// part that went in and exited 0, every URL "done".
	rdb := goredis.NewClient(&goredis.Options{Addr: strings.TrimPrefix(r.URL(), "redis://")})
	defer rdb.Close()
	listC := writeLines(t, dir, "c.txt", []string{origin.URL + "/c1", origin.URL + "/c2"})
	if msg, code := crawl(filepath.Join(dir, "outC"), "partial", listC); code != 0 {
		t.Fatalf("the seeder: exit %d %s", code, msg)
	}
	rdb.SAdd(context.Background(), "eg:{partial}:loading", "a list a killed seeder left")
	if msg, code := crawl(filepath.Join(dir, "outD"), "partial", ""); code != exitUnfinished || !strings.Contains(msg, "did not go in whole") {
		t.Errorf("a joiner of a crawl with a list not loaded whole: exit %d %q, want %d saying so", code, msg, exitUnfinished)
	}
	// Status cannot tell a list being loaded from one its loader left:
	// it says either may be (it said "did not go in whole" of a list a
	// live seeder was still loading).
	if out, msg, code := run(t, "status", "--redis", r.URL(), "--crawl", "partial"); code != 0 || !strings.Contains(out, "0 not found, 0 abandoned") || !strings.Contains(out, "not in whole yet: a worker is loading one now, or one stopped while loading") {
		t.Errorf("status of that crawl: exit %d %s\n%s\nwant the not found apart from the abandoned, and the list not loaded whole", code, msg, out)
	}
	// The status in JSON has one style of keys, and lists, not nulls
	// ("Queued" beside "crawl", "workers": null before).
	out, msg, code := run(t, "status", "--redis", r.URL(), "--crawl", "lists", "--json")
	var st struct {
		Workers []json.RawMessage `json:"workers"`
		Queue   map[string]any    `json:"queue"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Workers == nil || st.Queue["done"] != float64(3) {
		t.Errorf("status --json: exit %d %s\n%s\nwant workers [] and queue.done 3", code, msg, out)
	}
}

// TestSharedHostRate: a --host-rate is compared between workers as the rate
// it is, whatever its unit: 120/min beside 2/s was refused as another.
func TestSharedHostRate(t *testing.T) {
	a := sharedSettings(crawlFlags{exitFlags: exitFlags{hostRate: "120/min"}})["--host-rate"]
	b := sharedSettings(crawlFlags{exitFlags: exitFlags{hostRate: "2/s"}})["--host-rate"]
	c := sharedSettings(crawlFlags{exitFlags: exitFlags{hostRate: "3/s"}})["--host-rate"]
	if a != b || a == c {
		t.Errorf("--host-rate 120/min as %q, 2/s as %q, 3/s as %q; want the first two alike and the third not", a, b, c)
	}
}

// TestRedisURLRedacted: a --redis URL Redis refuses is named without its
// password (it was printed whole, the README promising credentials never
// are), and so is the scheme the hint adds.
func TestRedisURLRedacted(t *testing.T) {
	for _, url := range []string{"redis://:s3cretPW@127.0.0.1:6379/abc", "redis://bob:s3cretPW@127.0.0.1:6379/x?foo=1",
		"bob:s3cretPW@127.0.0.1:6379", "rediss://s3cretPW@127.0.0.1:6379/abc"} {
		_, msg, code := run(t, "status", "--redis", url, "--crawl", "c")
		if code != exitUsage || strings.Contains(msg, "s3cretPW") || !strings.Contains(msg, "xxxxx") {
			t.Errorf("status --redis %q: exit %d %q, want 2 with the password masked", url, code, msg)
		}
	}
}

// TestStatusFleetFlags: status --redis honours --watch and --timeout (it
// printed once and returned, whatever they said), refuses --rows (which it
// ignored) and a --crawl without --redis (ADDR was read as an unknown
// command).
func TestStatusFleetFlags(t *testing.T) {
	r := peertest.StartRedis(t)
	if _, msg, code := run(t, "status", "--redis", r.URL(), "--crawl", "c", "--rows", "3"); code != exitUsage || !strings.Contains(msg, "--rows") {
		t.Errorf("status --redis --rows: exit %d %q, want 2 naming --rows", code, msg)
	}
	if _, msg, code := run(t, "status", "--redis", r.URL(), "--crawl", "c", "--timeout", "0s"); code != exitUsage || !strings.Contains(msg, "--timeout") {
		t.Errorf("status --redis --timeout 0s: exit %d %q, want 2", code, msg)
	}
	if _, msg, code := run(t, "status", "--crawl", "c", "127.0.0.1:1"); code != exitUsage || !strings.Contains(msg, "give its --redis") {
		t.Errorf("status --crawl ADDR: exit %d %q, want 2 asking for --redis", code, msg)
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: strings.TrimPrefix(r.URL(), "redis://")})
	defer rdb.Close()
	rdb.HSet(context.Background(), "eg:{w}:learned", "h.example", `{"host":"h.example","phase":"settled"}`)
	// --redis from its variable: status asked for it, "give its --redis
	// too" (the arguments were checked before the environment was read).
	t.Setenv("EXITGATE_STATUS_REDIS", r.URL())
	if out, msg, code := run(t, "status", "--crawl", "w"); code != 0 || !strings.Contains(out, "h.example") {
		t.Errorf("status --crawl with EXITGATE_STATUS_REDIS: exit %d %q, want the crawl's status:\n%s", code, msg, out)
	}
	os.Unsetenv("EXITGATE_STATUS_REDIS")
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	root := newRootCmd()
	var out, errOut syncbuf.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"status", "--redis", r.URL(), "--crawl", "w", "--watch", "300ms"})
	err := root.ExecuteContext(ctx)
	if n := strings.Count(out.String(), "crawl w:"); err != nil || n < 3 {
		t.Errorf("status --redis --watch 300ms for 1.5 s: %v, printed %d times, want 3 or more:\n%s%s", err, n, out.String(), errOut.String())
	}
}
