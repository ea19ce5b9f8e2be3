package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/exitgate/exitgate/fleet"
	"github.com/exitgate/exitgate/internal/peertest"
)

// serveFleetArgs are the flags of a gateway of the fleet "g" in these
// tests: bind exits (nginx sees each as its own client address) on
// loopback, with a short --fleet-ttl.
func serveFleetArgs(redisURL, id, out, exits string, extra ...string) []string {
	return append([]string{"--redis", redisURL, "--crawl", "g", "--worker-id", id, "-x", exits,
		"--allow-private", "--no-intercept", "--fleet-ttl", "2s", "--lane-rate", "4/s", "--log-level", "info",
		"--out", out}, extra...)
}

// proxied gets target through the gateway at addr: the status and the
// exit that carried it (X-Exitgate-Exit), and the gateway's reason, if
// it answered itself.
func proxied(t *testing.T, c *http.Client, target string) (status int, exit, reason string, h http.Header) {
	t.Helper()
	resp, err := c.Get(target)
	if err != nil {
		t.Errorf("GET %s: %v", target, err)
		return 0, "", "", nil
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Exitgate-Exit"), resp.Header.Get("X-Exitgate-Reason"), resp.Header
}

func proxyClient(addr string) *http.Client {
	u := &url.URL{Scheme: "http", Host: addr}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), MaxIdleConnsPerHost: 16}, Timeout: 90 * time.Second}
}

// ownedBy waits until the fleet "g" has exactly the members ids, each
// owning at least one exit and all together total, and returns what each
// owns (rendezvous hashing splits few exits unevenly: 3 and 1 of 4).
func ownedBy(t *testing.T, rdb goredis.UniversalClient, total int, ids ...string) map[string][]string {
	t.Helper()
	var got map[string][]string
	var last []fleet.Member
	defer func() {
		if t.Failed() {
			for _, m := range last {
				t.Logf("the fleet last: %s owns %v", m.ID, m.Exits)
			}
		}
	}()
	waitUntil(t, 30*time.Second, func() bool {
		ms, err := fleet.Status(context.Background(), rdb, "g")
		last = ms
		if err != nil || len(ms) != len(ids) {
			return false
		}
		got = map[string][]string{}
		n := 0
		for _, m := range ms {
			if !slices.Contains(ids, m.ID) || len(m.Exits) == 0 {
				return false
			}
			got[m.ID] = m.Exits
			n += len(m.Exits)
		}
		return n == total
	})
	return got
}

// TestServeFleet runs two gateways of one fleet on one pool, as two
// scrapers on two machines would: each sends only through the exits it
// owns (nginx, limiting each client address, sees every exit within its
// limit), status shows both, and the exits of a gateway that stops move
// to the other.
func TestServeFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("real Redis and nginx, about 30 s")
	}
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	defer rdb.Close()
	ng := peertest.StartNginx(t, peertest.NginxConfig{Rate: fmt.Sprintf("%dr/s", fleetRate), Burst: fleetBurst, NoRetryAfter: true,
		Fallback: "page.txt", Files: map[string]string{"page.txt": "hello\n"}})
	dir := t.TempDir()
	// A polite ceiling of 8/s for the host, below the pool's 20: the two
	// gateways keep it together (on their own, each kept 8/s: 13.6 ok/s at the host
	// together, by hand, the README's figure).
	const exits, hostRate = "bind:127.0.0.191-127.0.0.194", 8
	ga := startServe(t, nil, serveFleetArgs(r.URL(), "gA", filepath.Join(dir, "a"), exits, "--host-rate", fmt.Sprintf("%d/s", hostRate))...)
	gb := startServe(t, nil, serveFleetArgs(r.URL(), "gB", filepath.Join(dir, "b"), exits, "--host-rate", fmt.Sprintf("%d/s", hostRate))...)
	for _, g := range []*serveProc{ga, gb} {
		if !strings.Contains(g.Stderr(), `of crawl "g"`) {
			t.Fatalf("no fleet line:\n%s", g.Stderr())
		}
	}
	owned := ownedBy(t, rdb, 4, "gA", "gB")
	if len(owned["gA"]) != 2 {
		t.Errorf("shares %v, want two exits each (a fleet of gateways has no leader's extra exits)", owned)
	}
	// gA owned the four alone until gB came: it lets go of gB's within a
	// heartbeat; a --fleet-ttl later each sends through its own only.
	time.Sleep(2 * time.Second)

	out, err := exec.Command(exitgateBinary(t), "status", "--redis", r.URL(), "--crawl", "g").CombinedOutput()
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	for _, want := range []string{"gA", "gB", `fleet g of gateways (exitgate serve): 2 live`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("status does not say %q:\n%s", want, out)
		}
	}
	out, err = exec.Command(exitgateBinary(t), "status", "--json", "--redis", r.URL(), "--crawl", "g").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"gateways": true`) || strings.Contains(string(out), `"queue"`) {
		t.Errorf("status --json of gateways: %v, want them without a crawl's queue:\n%s", err, out)
	}

	// gB's clients alone first: its lanes search the host's limit
	// themselves (fleet.Config.Even), up to the ceiling. A fleet with a
	// leader searching for all held them at half the first guess for
	// good, the leader gA sending nothing to the host: 2/s a lane, 4/s
	// of the 8.
	const alone = 64
	cb := proxyClient(gb.addr)
	var wg0 sync.WaitGroup
	for k := range 8 {
		wg0.Go(func() {
			for i := range alone / 8 {
				if status, _, _, _ := proxied(t, cb, fmt.Sprintf("%s/alone/%d-%d", ng.URL(), k, i)); status != 200 {
					t.Errorf("gB alone: status %d", status)
				}
			}
		})
	}
	wg0.Wait()
	log0 := ng.AccessLog(t, alone)
	rate0 := float64(len(log0)-1) / log0[len(log0)-1].Time.Sub(log0[0].Time).Seconds()
	t.Logf("gB alone: %d requests at %.2f/s (--host-rate %d/s, nginx %d/s on each of its 2 exits)", len(log0), rate0, hostRate, fleetRate)
	if rate0 < 0.75*hostRate {
		t.Errorf("gB alone sent %.2f requests a second, want at least %.1f: its lanes did not learn the host", rate0, 0.75*hostRate)
	}

	// 8 clients per gateway, 10 requests each: 160 requests, at the
	// host's 8/s about 20 s.
	const clients, each = 8, 10
	var mu sync.Mutex
	used := map[string]map[string]int{"gA": {}, "gB": {}}
	statuses := map[int]int{}
	var wg sync.WaitGroup
	began := time.Now()
	for _, g := range []struct {
		id string
		p  *serveProc
	}{{"gA", ga}, {"gB", gb}} {
		c := proxyClient(g.p.addr)
		for k := range clients {
			wg.Go(func() {
				for i := range each {
					status, exit, _, _ := proxied(t, c, fmt.Sprintf("%s/p/%s-%d-%d", ng.URL(), g.id, k, i))
					mu.Lock()
					statuses[status]++
					used[g.id][exit]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	t.Logf("%d requests in %v", 2*clients*each, time.Since(began))
	if statuses[200] != 2*clients*each {
		t.Errorf("client statuses %v, want %d 200s", statuses, 2*clients*each)
	}
	for id, exitsUsed := range used {
		for e := range exitsUsed {
			if !strings.Contains(strings.Join(owned[id], " "), e) {
				t.Errorf("gateway %s sent through %s, which it does not own (it owns %v)", id, e, owned[id])
			}
		}
	}
	t.Logf("exits used: %v", used)

	log := ng.AccessLog(t, len(log0)+2*clients*each)
	perExit := map[string][]time.Time{}
	n429 := 0
	for _, e := range log {
		switch e.Status {
		case 429:
			n429++
		case 200:
			perExit[e.RemoteAddr] = append(perExit[e.RemoteAddr], e.Time)
		}
	}
	t.Logf("nginx: %d requests, %d 429s, %d exits", len(log), n429, len(perExit))
	// What the lanes' learning costs: a 429 or so per exit as each finds
	// nginx's rate from the first guess (4/s) up; and within nginx's
	// limit, below.
	if n429 > 4 {
		t.Errorf("nginx answered %d of %d requests 429, want at most 4 (one per exit, learning)", n429, len(log))
	}
	withinLimit(t, perExit)
	// The host's ceiling, both gateways' requests together: at most
	// hostRate·w and two in any window of 1 s and 5 s (nginx logs a
	// request when it has answered it: the times jitter by tens of ms).
	for _, w := range []time.Duration{time.Second, 5 * time.Second} {
		for i := range log {
			n := 0
			for _, e := range log {
				if !e.Time.Before(log[i].Time) && e.Time.Sub(log[i].Time) < w {
					n++
				}
			}
			if float64(n) > hostRate*w.Seconds()+2 {
				t.Fatalf("nginx saw %d requests from the fleet within %v, above its --host-rate %d/s", n, w, hostRate)
			}
		}
	}

	// gA stops: its exits go to gB at once (it leaves the fleet), and gB
	// sends through all four.
	if err := ga.stop(t); err != nil {
		t.Errorf("gA after SIGTERM: %v\n%s", err, ga.Stderr())
	}
	if i := strings.Index(ga.Stdout(), "Redis: "); i < 0 {
		t.Errorf("gA's summary says nothing of Redis:\n%s", ga.Stdout())
	} else {
		t.Logf("gA: %s", strings.SplitN(ga.Stdout()[i:], "\n", 2)[0]) // the README's round trips a gateway's request costs
	}
	ownedBy(t, rdb, 4, "gB")
	time.Sleep(time.Second) // gB's next heartbeat hands it the four
	c := proxyClient(gb.addr)
	after := map[string]int{}
	var wg2 sync.WaitGroup
	for k := range 8 {
		wg2.Go(func() {
			for i := range 5 {
				status, exit, _, _ := proxied(t, c, fmt.Sprintf("%s/q/%d-%d", ng.URL(), k, i))
				mu.Lock()
				if status == 200 {
					after[exit]++
				}
				mu.Unlock()
			}
		})
	}
	wg2.Wait()
	if len(after) != 4 {
		t.Errorf("after gA stopped, gB sent through %v, want all four exits", after)
	}
	if err := gb.stop(t); err != nil {
		t.Errorf("gB after SIGTERM: %v\n%s", err, gb.Stderr())
	}
	// Once both stopped, status still shows what they did (it said "no
	// crawl" with their reports in Redis).
	out, err = exec.Command(exitgateBinary(t), "status", "--redis", r.URL(), "--crawl", "g").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "every run (2)") {
		t.Errorf("status after both stopped: %v, want their two runs:\n%s", err, out)
	}
}

// TestServeFleetNoExit: with more gateways than exits, the gateway that
// owns none answers 503 at once, saying why, and sends nothing; a gateway
// whose settings differ from the fleet's, or a crawl worker, is refused
// before it serves or crawls.
func TestServeFleetNoExit(t *testing.T) {
	if testing.Short() {
		t.Skip("real Redis and nginx")
	}
	r := peertest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	defer rdb.Close()
	ng := peertest.StartNginx(t, peertest.NginxConfig{Fallback: "page.txt", Files: map[string]string{"page.txt": "hello\n"}})
	dir := t.TempDir()
	const exit = "bind:127.0.0.195"
	gws := map[string]*serveProc{
		"gA": startServe(t, nil, serveFleetArgs(r.URL(), "gA", filepath.Join(dir, "a"), exit, "--progress", "200ms")...),
		"gB": startServe(t, nil, serveFleetArgs(r.URL(), "gB", filepath.Join(dir, "b"), exit, "--progress", "200ms")...),
	}
	var owner, idle string
	waitUntil(t, 30*time.Second, func() bool {
		ms, err := fleet.Status(context.Background(), rdb, "g")
		if err != nil || len(ms) != 2 {
			return false
		}
		owner, idle = "", ""
		for _, m := range ms {
			if len(m.Exits) == 1 {
				owner = m.ID
			} else {
				idle = m.ID
			}
		}
		return owner != "" && idle != ""
	})
	time.Sleep(time.Second) // each has heard the fleet's split
	before := len(ng.AccessLog(t, 0))
	status, _, reason, h := proxied(t, proxyClient(gws[idle].addr), ng.URL()+"/p/idle")
	if status != http.StatusServiceUnavailable || reason != "no exit owned" || h.Get("Retry-After") == "" {
		t.Errorf("the gateway with no exit answered %d %q (Retry-After %q), want 503 \"no exit owned\" with Retry-After", status, reason, h.Get("Retry-After"))
	}
	if n := len(ng.AccessLog(t, 0)); n != before {
		t.Errorf("the gateway with no exit sent %d requests", n-before)
	}
	if status, exitUsed, _, _ := proxied(t, proxyClient(gws[owner].addr), ng.URL()+"/p/owner"); status != 200 || exitUsed == "" {
		t.Errorf("the gateway with the exit answered %d through %q, want 200", status, exitUsed)
	}

	// Each progress line says what the gateway owns.
	for id, want := range map[string]string{owner: "1 of 1 exits owned, 2 gateways", idle: "0 of 1 exits owned, 2 gateways"} {
		if !strings.Contains(gws[id].Stderr(), want) {
			t.Errorf("%s's progress does not say %q:\n%s", id, want, gws[id].Stderr())
		}
	}

	// A third with another --host-rate: refused, exit 2, before serving.
	cmd := exec.Command(exitgateBinary(t), append([]string{"serve", "--listen", "127.0.0.1:0"},
		serveFleetArgs(r.URL(), "gC", filepath.Join(dir, "c"), exit, "--host-rate", "5/s")...)...)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != exitUsage || !strings.Contains(string(out), "--host-rate is 5/s here") {
		t.Errorf("a gateway with another --host-rate: %v, want exit %d naming --host-rate:\n%s", err, exitUsage, out)
	}
	// A crawl worker given the gateways' fleet: refused too (a fleet is
	// of gateways or of a crawl's workers: they split exits otherwise),
	// for that first, though its --fleet-ttl differs too (a gateway given
	// a crawl's name was sent to change its flags one by one first).
	urls := filepath.Join(dir, "urls.txt")
	os.WriteFile(urls, []byte(ng.URL()+"/p/crawl\n"), 0o644)
	cmd = exec.Command(exitgateBinary(t), "crawl", "--redis", r.URL(), "--crawl", "g", "-x", exit,
		"--out", filepath.Join(dir, "crawl"), urls)
	cmd.Env = cleanEnv()
	out, err = cmd.CombinedOutput()
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != exitUsage || !strings.Contains(string(out), `its live members are "exitgate serve", this is "exitgate crawl"`) {
		t.Errorf("a crawl worker in a fleet of gateways: %v, want exit %d naming the command:\n%s", err, exitUsage, out)
	}
	// Refused before anything is written: its --out marked a worker's,
	// the next run there warned that Redis had lost the crawl.
	if _, err := os.Stat(filepath.Join(dir, "crawl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused crawl worker's --out: %v, want none made", err)
	}
	// A gateway given a finished crawl's name (its workers gone, its
	// URLs in Redis): refused, or status showed a fleet of gateways and
	// hid the crawl.
	cmd = exec.Command(exitgateBinary(t), "crawl", "--redis", r.URL(), "--crawl", "done", "-x", exit, "--fleet-ttl", "2s",
		"--ignore-robots", "--progress", "0", "--out", filepath.Join(dir, "crawl2"), urls)
	cmd.Env = cleanEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("a crawl of one URL: %v\n%s", err, out)
	}
	cmd = exec.Command(exitgateBinary(t), append([]string{"serve", "--listen", "127.0.0.1:0"},
		serveFleetArgs(r.URL(), "gD", filepath.Join(dir, "d"), exit)...)...)
	cmd.Args[slices.Index(cmd.Args, "g")] = "done" // its --crawl
	cmd.Env = cleanEnv()
	out, err = cmd.CombinedOutput()
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != exitUsage || !strings.Contains(string(out), "names a distributed crawl") {
		t.Errorf("a gateway given a crawl's name: %v, want exit %d:\n%s", err, exitUsage, out)
	}
	for id, g := range gws {
		if err := g.stop(t); err != nil {
			t.Errorf("%s after SIGTERM: %v\n%s", id, err, g.Stderr())
		}
	}
}
