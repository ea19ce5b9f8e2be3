package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/exitgate/exitgate/internal/peers"
	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/sim/measure"
)

// serveProc is a running `exitgate serve` binary.
type serveProc struct {
	cmd            *exec.Cmd
	addr           string // host:port it serves on
	mu             sync.Mutex
	stdout, stderr bytes.Buffer
	done           chan struct{}
	err            error
}

func (p *serveProc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

func (p *serveProc) Stdout() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

var servingRE = regexp.MustCompile(`serving on http://(\S+) `)

// startServe runs `exitgate serve --listen 127.0.0.1:0 ARGS` with the
// environment env added (proxy variables removed), and returns once it
// serves. The process is killed when the test ends if it still runs.
func startServe(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	bin := exitgateBinary(t)
	p := &serveProc{done: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0", "--progress", "0"}, args...)...)
	p.cmd.Env = append(cleanEnv(), env...)
	p.cmd.Stdout = lockedWriter{&p.mu, &p.stdout}
	pr, pw := io.Pipe()
	p.cmd.Stderr = pw
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if m := servingRE.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	go func() {
		p.err = p.cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill() // our own child, by its pid
			<-p.done
		}
	})
	select {
	case p.addr = <-addr:
	case <-p.done:
		t.Fatalf("serve exited before serving: %v\n%s", p.err, p.Stderr())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not start in 30s\n%s", p.Stderr())
	}
	return p
}

// stop sends SIGTERM and waits for the process to exit.
func (p *serveProc) stop(t *testing.T) error {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(40 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("serve still running 40s after SIGTERM\n%s", p.Stderr())
		return nil
	}
}

// cleanEnv is the environment without proxy settings, which curl, Python
// and Scrapy would otherwise pick up.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToLower(k) {
		case "http_proxy", "https_proxy", "all_proxy", "no_proxy":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// runClient runs a real client with a bounded time and returns its stdout.
func runClient(t *testing.T, timeout time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s: %w\n%s", name, err, stderr.String())
	}
	return stdout.String(), err
}

// tlsOriginFile starts an HTTPS origin offering HTTP/2 and writes its
// certificate to a file, for the gateway's SSL_CERT_FILE.
func tlsOriginFile(t *testing.T, h http.HandlerFunc) (*httptest.Server, string) {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	path := filepath.Join(t.TempDir(), "origin.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return s, path
}

// TestServeRealClients runs the exitgate binary as a gateway and points
// real clients at it: curl over plain HTTP and over HTTPS trusting the CA
// (and refusing it without), Python requests verifying the CA; the gateway
// speaks HTTP/2 to the origin. Then SIGTERM while a request is in flight:
// it finishes, and the summary is written.
func TestServeRealClients(t *testing.T) {
	curl := peertest.Require(t, "curl")
	if _, err := runClient(t, 30*time.Second, "/usr/bin/python3", "-c", "import requests"); err != nil {
		peertest.Check(t, &notInstalled{"python3-requests", err})
	}
	var protos sync.Map
	slowStarted := make(chan struct{}, 1)
	handler := func(w http.ResponseWriter, r *http.Request) {
		protos.Store(r.Proto, true)
		if r.URL.Path == "/slow" {
			slowStarted <- struct{}{}
			time.Sleep(1500 * time.Millisecond) // a request in flight at SIGTERM
		}
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
	}
	plain := httptest.NewServer(http.HandlerFunc(handler))
	defer plain.Close()
	secure, originCert := tlsOriginFile(t, handler)
	su, _ := url.Parse(secure.URL)
	dir := t.TempDir()
	caDir, out := filepath.Join(dir, "ca"), filepath.Join(dir, "out")
	gw := startServe(t, []string{"SSL_CERT_FILE=" + originCert},
		"--ca-dir", caDir, "--out", out, "--allow-private", "--connect-ports", su.Port()+",443")
	proxy := "http://" + gw.addr
	caPEM := filepath.Join(caDir, "ca.pem")
	if fi, err := os.Stat(filepath.Join(caDir, "ca-key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("CA key: %v, mode %v; want 0600", err, fi.Mode())
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"curl http", []string{"-sS", "-x", proxy, plain.URL + "/a"}, "GET /a"},
		{"curl https with the CA", []string{"-sS", "-x", proxy, "--cacert", caPEM, secure.URL + "/b"}, "GET /b"},
		{"curl https, HTTP/1.1 to the gateway", []string{"-sS", "--http1.1", "-x", proxy, "--cacert", caPEM, "-X", "PUT", "-d", "x=1", secure.URL + "/c"}, "PUT /c"},
	} {
		got, err := runClient(t, 30*time.Second, curl, tc.args...)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	// Without the CA, curl refuses the gateway's certificate (exit 60).
	if _, err := runClient(t, 30*time.Second, curl, "-sS", "-x", proxy, secure.URL+"/untrusted"); err == nil || !strings.Contains(err.Error(), "exit status 60") {
		t.Errorf("curl https without the CA: %v, want a certificate failure (exit 60)", err)
	}

	script := `
import sys, requests
proxy, ca, url = sys.argv[1:4]
s = requests.Session()
s.trust_env = False
r = s.get(url, proxies={"http": proxy, "https": proxy}, verify=ca, timeout=30)
print(r.status_code, r.text, r.headers.get("X-Exitgate-Exit"))
s2 = requests.Session()  # a new connection: the first one's tunnel is verified already
s2.trust_env = False
try:
    s2.get(url, proxies={"http": proxy, "https": proxy}, verify=True, timeout=30)
    print("unverified")
except requests.exceptions.SSLError:
    print("refused")
`
	got, err := runClient(t, 60*time.Second, "/usr/bin/python3", "-c", script, proxy, caPEM, secure.URL+"/py")
	if err != nil || got != "200 GET /py direct\nrefused\n" {
		t.Errorf("python requests: %q, %v; want 200 through the gateway verifying the CA, and a refusal without it", got, err)
	}
	if _, ok := protos.Load("HTTP/2.0"); !ok {
		t.Errorf("the HTTPS origin offers HTTP/2; the gateway spoke %v", keysOf(&protos))
	}

	// SIGTERM with a request in flight: it finishes; then the gateway
	// exits 0 with its summary.
	type result struct {
		body string
		err  error
	}
	slow := make(chan result, 1)
	go func() {
		body, err := runClient(t, 30*time.Second, curl, "-sS", "-x", proxy, plain.URL+"/slow")
		slow <- result{body, err}
	}()
	select {
	case <-slowStarted:
	case <-time.After(20 * time.Second):
		t.Fatal("the slow request never reached the origin")
	}
	if err := gw.stop(t); err != nil {
		t.Errorf("serve after SIGTERM: %v\n%s", err, gw.Stderr())
	}
	if r := <-slow; r.err != nil || r.body != "GET /slow" {
		t.Errorf("the request in flight at SIGTERM: %q, %v; want it finished", r.body, r.err)
	}
	var sum struct {
		Done     int `json:"done"`
		Requests int `json:"requests"`
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err == nil {
		err = json.Unmarshal(data, &sum)
	}
	if err != nil || sum.Done != 5 || sum.Requests != 5 {
		t.Errorf("summary.json: %+v, %v; want 5 requests (curl 4, Python 1), 5 done\n%s", sum, err, gw.Stdout())
	}
	if !strings.Contains(gw.Stderr(), "draining") {
		t.Errorf("serve did not say it drains:\n%s", gw.Stderr())
	}
}

func keysOf(m *sync.Map) []any {
	var out []any
	m.Range(func(k, _ any) bool { out = append(out, k); return true })
	return out
}

// notInstalled turns a missing Python module into peertest's "not
// installed" error, so that EXITGATE_REQUIRE_PEERS decides skip or fail.
type notInstalled struct {
	pkg string
	err error
}

func (e *notInstalled) Error() string {
	return fmt.Sprintf("%s is not installed (apt-get install %s): %v", e.pkg, e.pkg, e.err)
}

func (e *notInstalled) Is(target error) bool { return target == peers.ErrNotInstalled }

// TestServeOpenBindRefused: the binary refuses to listen beyond loopback
// without --auth (exit 2, before listening), and serves with it.
func TestServeOpenBindRefused(t *testing.T) {
	bin := exitgateBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "serve", "--listen", "0.0.0.0:0", "--no-intercept", "--out", dir)
	cmd.Env = cleanEnv()
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(string(b), "--auth") {
		t.Errorf("serve --listen 0.0.0.0:0 without --auth: %v\n%s; want exit 2 asking for --auth", err, b)
	}
	gw := startServe(t, []string{"EXITGATE_SERVE_AUTH=scraper:Pw-From-Env-5"}, "--listen", "0.0.0.0:0", "--no-intercept", "--out", dir)
	port := gw.addr[strings.LastIndex(gw.addr, ":")+1:]
	resp, err := http.DefaultClient.Do(&http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "http", Host: "127.0.0.1:" + port, Path: "/"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := gw.stop(t); err != nil {
		t.Errorf("serve with --auth after SIGTERM: %v", err)
	}
	if strings.Contains(gw.Stderr()+gw.Stdout(), "Pw-From-Env-5") {
		t.Errorf("the password shows in the output")
	}
}

// TestServeScrapyThroughTinyproxyExits is the gateway's acceptance test: a
// Scrapy spider (Debian's python3-scrapy) crawls, through `exitgate serve`,
// an nginx that limits each client address to 1 request/s (limit_req, 429
// with Retry-After: 1) behind four tinyproxy exits bound to distinct
// loopback addresses. The gateway takes the 429s: Scrapy sees at most 1%.
// The pool's utilization is read from nginx's own log and reported.
func TestServeScrapyThroughTinyproxyExits(t *testing.T) {
	if testing.Short() {
		t.Skip("a 30 s crawl")
	}
	if _, err := runClient(t, 60*time.Second, "/usr/bin/python3", "-c", "import scrapy"); err != nil {
		peertest.Check(t, &notInstalled{"python3-scrapy", err})
	}
	const exits, rate, crawlFor = 4, 1.0, 30
	ng := peertest.StartNginx(t, peertest.NginxConfig{Rate: "1r/s", Files: map[string]string{"page.txt": "a page\n"}, Fallback: "page.txt"})
	var lines []string
	var binds []string
	for i := range exits {
		bind := fmt.Sprintf("127.0.0.%d", 41+i)
		p := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: bind})
		lines = append(lines, p.URL())
		binds = append(binds, bind)
	}
	dir := t.TempDir()
	proxies := filepath.Join(dir, "proxies.txt")
	if err := os.WriteFile(proxies, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	gw := startServe(t, nil, "--proxies", proxies, "--allow-private", "--no-intercept", "--out", out)

	spider := filepath.Join(dir, "spider.py")
	stats := filepath.Join(dir, "stats.json")
	if err := os.WriteFile(spider, []byte(scrapySpider), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := runClient(t, 120*time.Second, "/usr/bin/python3", "-m", "scrapy", "runspider", spider,
		"-a", "base="+ng.URL(), "-a", "proxy=http://"+gw.addr, "-a", "n=2000", "-a", "stats="+stats,
		"-s", "CLOSESPIDER_TIMEOUT="+strconv.Itoa(crawlFor), "-s", "CONCURRENT_REQUESTS=16", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=16",
		"-s", "RETRY_ENABLED=False", "-s", "ROBOTSTXT_OBEY=False", "-s", "DOWNLOAD_TIMEOUT=120", "-s", "TELNETCONSOLE_ENABLED=False",
		"-s", "LOG_LEVEL=WARNING", "-s", "HTTPERROR_ALLOW_ALL=True")
	end := time.Now()
	if err != nil {
		t.Fatalf("scrapy: %v", err)
	}
	if err := gw.stop(t); err != nil {
		t.Errorf("serve after SIGTERM: %v\n%s", err, gw.Stderr())
	}
	var st map[string]any
	data, err := os.ReadFile(stats)
	if err == nil {
		err = json.Unmarshal(data, &st)
	}
	if err != nil {
		t.Fatalf("scrapy stats: %v", err)
	}
	num := func(k string) int {
		f, _ := st[k].(float64)
		return int(f)
	}
	responses, n200, n429 := num("downloader/response_count"), num("downloader/response_status_count/200"), num("downloader/response_status_count/429")

	var sum struct {
		Done     int   `json:"done"`
		Requests int64 `json:"requests"`
	}
	if data, err := os.ReadFile(filepath.Join(out, "summary.json")); err != nil || json.Unmarshal(data, &sum) != nil {
		t.Fatalf("no summary.json: %v", err)
	}
	// What nginx saw, per exit, over the crawl (nginx logs each request
	// just after answering it: wait for as many as the gateway sent).
	log := ng.AccessLog(t, int(sum.Requests))
	var hits []measure.Hit
	server429, strangers := 0, 0
	isExit := map[string]bool{}
	for _, b := range binds {
		isExit[b] = true
	}
	for _, e := range log {
		if !isExit[e.RemoteAddr] {
			strangers++
			continue
		}
		hits = append(hits, measure.Hit{At: e.Time, Key: e.RemoteAddr, Status: e.Status})
		if e.Status == 429 {
			server429++
		}
	}
	fig, err := measure.Compute(hits, measure.Config{Start: start, End: end, Keys: exits, Rate: rate})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Scrapy, %d s through exitgate serve, %d tinyproxy exits, nginx 1r/s per IP: %d responses to Scrapy, %d 200, %d 429 (%.2f%%); nginx saw %d requests from the exits, %d 429s (%.2f%%, retried by the gateway); pool utilization %.1f%% over the crawl",
		crawlFor, exits, responses, n200, n429, 100*float64(n429)/float64(max(responses, 1)), len(hits), server429,
		100*fig.Ratio429, 100*fig.Utilization)
	if responses < 30 {
		t.Errorf("Scrapy got %d responses in %d s, want at least 30", responses, crawlFor)
	}
	if n429*100 > responses {
		t.Errorf("Scrapy saw %d 429s in %d responses, want at most 1%%", n429, responses)
	}
	if strangers > 0 {
		t.Errorf("nginx saw %d requests from addresses that are not exits", strangers)
	}
	if fig.OK != n200 {
		t.Errorf("nginx served %d 200s to the exits, Scrapy counted %d", fig.OK, n200)
	}
	if sum.Done != n200 || sum.Requests != int64(len(hits)) {
		t.Errorf("summary.json: %d done, %d requests; nginx: %d 200s, %d requests", sum.Done, sum.Requests, fig.OK, len(hits))
	}
}

// scrapySpider requests n distinct pages of base through proxy, and writes
// Scrapy's stats to a JSON file when it closes.
const scrapySpider = `
import json
import scrapy

class Pages(scrapy.Spider):
    name = "pages"

    def __init__(self, base, proxy, n, stats, **kw):
        super().__init__(**kw)
        self.base, self.proxy, self.n, self.stats_path = base, proxy, int(n), stats

    def start_requests(self):
        for i in range(self.n):
            yield scrapy.Request(f"{self.base}/p/{i}", meta={"proxy": self.proxy}, dont_filter=True)

    def parse(self, response):
        pass

    def closed(self, reason):
        with open(self.stats_path, "w") as f:
            json.dump(self.crawler.stats.get_stats(), f, default=str)
`

// TestServeDrainCutShort: a second SIGTERM while a request is in flight
// stops the gateway at once, exit 1 saying requests were cut (it exited 0,
// as if every client had its answer), with the summary written and the cut
// request counted as not done.
func TestServeDrainCutShort(t *testing.T) {
	curl := peertest.Require(t, "curl")
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case started <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer origin.Close()
	defer close(release)
	out := filepath.Join(t.TempDir(), "out")
	gw := startServe(t, nil, "--out", out, "--allow-private")
	go runClient(t, 30*time.Second, curl, "-sS", "-x", "http://"+gw.addr, origin.URL+"/held")
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatalf("the request never reached the origin\n%s", gw.Stderr())
	}
	gw.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond)
	began := time.Now()
	err := gw.stop(t) // the second SIGTERM
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("serve took %v to stop after the second signal, want at once", took)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("serve after a drain cut short: %v, want exit 1\n%s", err, gw.Stderr())
	}
	if !strings.Contains(gw.Stderr(), "stopped with requests still in flight (a second signal)") {
		t.Errorf("serve did not say requests were cut:\n%s", gw.Stderr())
	}
	var sum struct {
		Done      int            `json:"done"`
		Abandoned int            `json:"abandoned"`
		Why       map[string]int `json:"abandoned_by_reason"`
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err == nil {
		err = json.Unmarshal(data, &sum)
	}
	if err != nil || sum.Done != 0 || sum.Abandoned != 1 || sum.Why["cut at shutdown"] != 1 {
		t.Errorf("summary.json: %+v, %v; want the cut request not done, abandoned as cut at shutdown\n%s", sum, err, gw.Stdout())
	}
}

// TestServeBadFlagsRefused: a --connect-ports that is no port, and a
// --listen without a port, are refused before anything is set up (exit 2),
// each with advice about itself: --connect-ports 0 exited 1 from inside the
// gateway after the CA and the output were made, and a --listen without a
// port was told to set --auth.
func TestServeBadFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args      []string
		want, not string
	}{
		{[]string{"--connect-ports", "0"}, "--connect-ports: 0 is not a port", ""},
		{[]string{"--connect-ports", "443,70000"}, "--connect-ports: 70000 is not a port", ""},
		{[]string{"--listen", "127.0.0.1"}, "want HOST:PORT", "--auth"},
		{[]string{"--ca-dir", "/tmp/unused-ca"}, "--ca-dir does nothing with --no-intercept", ""},
	} {
		r := runCmd(t, append([]string{"serve", "--no-intercept", "--out", filepath.Join(dir, "out")}, tc.args...)...)
		if exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), tc.want) || tc.not != "" && strings.Contains(r.err.Error(), tc.not) {
			t.Errorf("serve %v: %v, want exit %d saying %q", tc.args, r.err, exitUsage, tc.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
			t.Errorf("serve %v: the output directory was made", tc.args)
		}
	}
}

// TestServeSelfExitRefused: an exit whose proxy is the gateway's own
// address is refused at the start (exit 2): every request through it came
// back in as a new one, 22 deep in 30 s, and the client got nothing. And a
// --metrics-addr on --listen's port is named as what took it.
func TestServeSelfExitRefused(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-x", "http://" + addr}, "the exit is this gateway's own address"},
		{[]string{"-x", "direct", "-x", "localhost:" + addr[strings.LastIndex(addr, ":")+1:]}, "the exit is this gateway's own address"},
		{[]string{"--metrics-addr", addr}, "--metrics-addr " + addr + " took its port"},
	} {
		r := runCmd(t, append([]string{"serve", "--no-intercept", "--listen", addr, "--out", filepath.Join(dir, "out")}, tc.args...)...)
		if exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), tc.want) {
			t.Errorf("serve %v: %v, want exit %d saying %q", tc.args, r.err, exitUsage, tc.want)
		}
	}
}

// TestServeOutInUse: a gateway refuses an --out another exitgate process
// holds (two gateways on one wrote over each other's summary and learned
// state).
func TestServeOutInUse(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	release, err := lockOut(out) // another process's hold, as far as flock tells
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	r := runCmd(t, "serve", "--no-intercept", "--listen", "127.0.0.1:0", "--out", out)
	if exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), "in use by another exitgate") {
		t.Errorf("serve on an --out in use: %v, want exit 2 saying so", r.err)
	}
}
