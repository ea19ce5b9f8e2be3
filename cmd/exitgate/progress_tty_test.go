package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestProgressBarOnATerminal runs the built binary under a pseudo-terminal
// (util-linux script(1)): stderr is a terminal, so the crawl draws the mpb
// bar, with the count, percentage, elapsed time and ETA, and prints the log
// above it; no periodic log lines.
func TestProgressBarOnATerminal(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		if os.Getenv("EXITGATE_REQUIRE_PEERS") != "" {
			t.Fatalf("script(1) (util-linux) not found: %v", err)
		}
		t.Skip("script(1) (util-linux) not found")
	}
	bin := exitgateBinary(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprintln(w, "User-agent: *\nCrawl-delay: 0.05")
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	urlFile := writeLines(t, dir, "urls.txt", siteURLs(srv.URL, 40))
	// 40 URLs at the Crawl-delay's 20/s: about 2 s, several redraws. The
	// pseudo-terminal gets a size, as a terminal window has one.
	crawl := func(cols int, out string) string {
		t.Helper()
		line := strings.Join([]string{bin, "crawl", "--out", filepath.Join(dir, out), "--lane-rate", "50/s", "--log-level", "info", "--progress", "200ms", urlFile}, " ")
		if cols > 0 {
			line = fmt.Sprintf("stty cols %d rows 40 && ", cols) + line
		}
		cmd := exec.Command(scriptBin, "-qec", line, "/dev/null")
		cmd.Env = append(os.Environ(), "TERM=xterm")
		done := make(chan struct{})
		var b []byte
		var err error
		go func() { b, err = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("the crawl under a terminal was still running after 60 s:\n%q", b)
		}
		if err != nil {
			t.Fatalf("crawl under a terminal: %v\n%q", err, b)
		}
		return string(b)
	}
	text := crawl(200, "out")
	for _, re := range []string{
		`finished 40/40 +100% \[=+\] +elapsed \d+s  ETA 0s`,                    // the final bar
		`finished [1-3]\d/40 +\d+% \[=*>-+\] +elapsed \d+s  ETA (\?|[\dms.]+)`, // a bar on the way
		`level=INFO msg="robots.txt crawl-delay"`,                              // the log, above it
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("the terminal did not show %s:\n%q", re, text)
		}
	}
	lines := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d finished`)
	if lines.MatchString(text) {
		t.Errorf("periodic log lines on a terminal:\n%q", text)
	}

	// A pseudo-terminal nobody sized (0 columns): mpb could draw nothing
	// there, so the crawl writes the log lines instead.
	text = crawl(0, "out-unsized")
	if !lines.MatchString(text) || strings.Contains(text, "[==") {
		t.Errorf("on a terminal of no width: want progress lines and no bar:\n%q", text)
	}

	// At 80 columns the line is cut: the rates come before the counts, so
	// the 429 figures stay (they were cut off, "15%elapsed" run together).
	text = crawl(80, "out-80")
	if !regexp.MustCompile(`% +elapsed \d+s  ETA [^ ]+  [\d.]+ ok/s  429 [\d.]+%`).MatchString(text) {
		t.Errorf("at 80 columns the bar's line lacks its rates:\n%q", text)
	}
}
