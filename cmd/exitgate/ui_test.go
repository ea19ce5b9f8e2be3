package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/exitgate/exitgate/internal/peertest"
	"github.com/exitgate/exitgate/internal/syncbuf"
	"github.com/exitgate/exitgate/monitor"
)

// hostileSite answers 200, or, once hostile, 429 (Retry-After: 1) to all
// but one request in ten: the learner cannot pace its way out of it.
type hostileSite struct {
	hostile atomic.Bool
	n       atomic.Int64
}

func (s *hostileSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.hostile.Load() && s.n.Add(1)%10 != 0 {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	}
	fmt.Fprintln(w, "ok", r.URL.Path)
}

// startUICrawl starts `exitgate crawl --ui 127.0.0.1:0 ...` in the
// background through twenty exits (local source addresses) over two
// well-behaved hosts and one that draws 429s on nine requests in ten, with
// monitor timings in seconds. It returns the dashboard's
// address and a function that waits for the crawl's end.
func startUICrawl(t *testing.T, dir string, d time.Duration) (addr string, wait func() crawlRun) {
	t.Helper()
	var urls []string
	for i, h := range []*hostileSite{{}, {}, {}} {
		h.hostile.Store(i == 2)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		for j := range 3000 {
			urls = append(urls, fmt.Sprintf("%s/p/%d", srv.URL, j))
		}
	}
	list := writeLines(t, dir, "urls.txt", urls)
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	root := newRootCmd()
	var out, errOut syncbuf.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"crawl", "--ui", "127.0.0.1:0", "--ignore-robots", "--out", filepath.Join(dir, "out"),
		"--lane-rate", "20/s", "--duration", d.String(), "--log-level", "warn", "-x", "bind:127.0.0.11-127.0.0.30",
		"--budget-window", "20s", "--alert-after", "3s", "--breaker-after", "6s", "--breaker-cooldown", "4s", "--linger", "8s", list})
	done := make(chan crawlRun, 1)
	go func() {
		err := root.ExecuteContext(ctx)
		done <- crawlRun{stdout: out.String(), stderr: errOut.String(), err: err}
		cancel()
	}()
	re := regexp.MustCompile(`dashboard at http://(\S+)/`)
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(errOut.String()); m != nil {
			return m[1], func() crawlRun { return <-done }
		}
	}
	cancel()
	t.Fatalf("no dashboard address on stderr:\n%s", errOut.String())
	return "", nil
}

// TestDashboardInBrowser loads the live dashboard of a running crawl in
// headless Chromium: the page loads offline (everything it needs is
// embedded), its three charts draw, live updates arrive over server-sent
// events, the host that turns hostile shows its alert and an open breaker,
// and `exitgate status` prints the same tables. It writes a screenshot to
// $EXITGATE_SCREENSHOT, or exitgate-dashboard.png in the temporary
// directory.
func TestDashboardInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20 s crawl in a real browser")
	}
	chrome := peertest.Require(t, "chromium")
	dir := t.TempDir()
	addr, wait := startUICrawl(t, dir, 25*time.Second)
	base := "http://" + addr + "/"

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 2000), chromedp.Flag("disable-dev-shm-usage", true))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(base), chromedp.WaitVisible("#hosts tbody tr")); err != nil {
		t.Fatalf("loading %s: %v", base, err)
	}
	poll := func(what, js string, timeout time.Duration) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText"))
			t.Fatalf("%s: not within %v (%v); the page reads:\n%s", what, timeout, err, body)
		}
	}
	poll("three live updates", `+document.getElementById("ticks").textContent >= 3`, 10*time.Second)
	first, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("updated").textContent`))
	poll("the hostile host's alert and open breaker", `(() => { const t = document.getElementById("hosts").innerText; return t.includes("ALERT") && /open|half-open/.test(t) })()`, 15*time.Second)
	poll("an open breaker in the events", `document.getElementById("events").innerText.includes("breaker_open")`, 5*time.Second)
	poll("three hosts in each chart's legend", `[...document.querySelectorAll(".chart")].every(c => c.querySelectorAll(".u-legend .u-series").length >= 3)`, 5*time.Second)
	// Each chart's canvas has drawn lines: coloured pixels, not a blank.
	inked, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[...document.querySelectorAll(".chart canvas")].map(c => {
		const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 0; i < d.length; i += 4) if (d[i+3] > 0 && !(d[i] > 200 && d[i+1] > 200 && d[i+2] > 200) && !(d[i] === d[i+1] && d[i+1] === d[i+2])) n++;
		return n;
	})`))
	if errs, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.dashboardErrors`)); len(errs) > 0 {
		t.Errorf("the page's script failed: %q", errs)
	}
	if err != nil || len(inked) != 3 {
		t.Fatalf("chart canvases: %v, %v; want 3", inked, err)
	}
	for i, n := range inked {
		if n < 200 {
			t.Errorf("chart %d has %d coloured pixels: nothing drawn", i, n)
		}
	}
	// The update time reads in whole seconds, and the polls above may all
	// pass within one: wait for it to move rather than read it once (under
	// the whole suite's load the page had drawn everything within the
	// second it was first read).
	poll(fmt.Sprintf("the update time moving on from %q", first), fmt.Sprintf(`document.getElementById("updated").textContent !== %q`, first), 5*time.Second)
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := os.Getenv("EXITGATE_SCREENSHOT")
	if path == "" {
		path = filepath.Join(os.TempDir(), "exitgate-dashboard.png")
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(shot))
	// Everything the page loaded came from the dashboard itself: it works
	// offline.
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`performance.getEntriesByType("resource").map(e => e.name)`))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range loaded {
		if !strings.HasPrefix(u, base) {
			t.Errorf("the page loaded %s, not from the dashboard: it must work offline", u)
		}
	}
	if len(loaded) < 4 {
		t.Errorf("the page loaded %v, want its script, styles, chart library and state", loaded)
	}

	// The same tables in a terminal.
	var text syncbuf.Buffer
	if err := runStatus(context.Background(), &text, addr, false, 5, 0, 5*time.Second); err != nil {
		t.Fatalf("status: %v", err)
	}
	for _, want := range []string{"HOSTS", "EXITS", "PARKED", "EVENTS", "LEARNER'S CHANGES", "ALERT", "breaker_open"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("exitgate status lacks %q:\n%s", want, text.String())
		}
	}

	// Once the crawl ends, --linger keeps the page up over its final
	// counts: it says so, not "live".
	poll("the page saying the crawl ended", `document.getElementById("live").textContent.startsWith("ended")`, 30*time.Second)

	r := wait()
	if r.err != nil && exitCode(r.err) != exitUnfinished {
		t.Fatalf("crawl: %v\n%s", r.err, r.stderr)
	}
	if !strings.Contains(r.stderr, "level=WARN msg=\"monitor: 429s over budget") || !strings.Contains(r.stderr, "monitor: circuit breaker open") {
		t.Errorf("no WARN lines for the alert and the breaker on stderr:\n%s", r.stderr)
	}
	sum := readSummary(t, filepath.Join(dir, "out"))
	kinds := map[string]int{}
	for _, e := range sum.Events {
		kinds[e.Kind]++
	}
	if kinds[monitor.KindOverBudget] == 0 || kinds[monitor.KindBreakerOpen] == 0 {
		t.Errorf("summary.json events by kind %v, want over_budget and breaker_open", kinds)
	}
	if sum.Abandoned != 0 {
		t.Errorf("%d URLs abandoned; the breaker parks, never abandons", sum.Abandoned)
	}
}
