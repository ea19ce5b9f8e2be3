package main

import (
	"strings"
	"testing"

	"github.com/exitgate/exitgate/internal/peertest"
)

// TestCrawlBrokenProxiesAreTheExitsFault: three broken proxies (one that
// speaks garbage, one that never answers, a SOCKS5 server that refuses the
// credentials) next to one working tinyproxy exit: every URL is done, none
// charged for the proxies' faults, and the broken exits are named in the
// summary with their proxy failures. Their failures used to be ordinary
// transport errors: charged to the URLs, which were abandoned as "retries
// exhausted" although a working exit was in the pool.
func TestCrawlBrokenProxiesAreTheExitsFault(t *testing.T) {
	site, srv := newCountingSite(t, 0)
	good := peertest.StartTinyproxy(t, peertest.TinyproxyConfig{Bind: "127.0.0.61"})
	dir := t.TempDir()
	garbage, silent, socks := peertest.BrokenProxy(t, peertest.Garbage), peertest.BrokenProxy(t, peertest.Silent), peertest.BrokenProxy(t, peertest.SOCKSReject)
	proxies := writeLines(t, dir, "proxies.txt", []string{
		"http://" + garbage,
		"http://" + silent,
		"socks5://user:pw@" + socks,
		good.URL(),
	})
	urls := siteURLs(srv.URL, 40)
	out, crawl := crawlList(t, dir, urls, "--proxies", proxies, "--lane-rate", "50/s",
		"--concurrency", "8", "--timeout", "2s", "--max-retries", "2", "--ignore-robots", "--progress", "0")
	r := crawl()
	if r.err != nil {
		t.Fatalf("crawl: %v\nstderr:\n%s", r.err, r.stderr)
	}
	for _, res := range checkAllDoneOnce(t, readResults(t, out), urls) {
		if res.Exit != good.Addr() {
			t.Errorf("result %s came through %s, want the working exit %s", res.URL, res.Exit, good.Addr())
		}
		if res.Attempts != 1 {
			t.Errorf("result %s: %d charged attempts, want 1 (proxy failures are not the URL's)", res.URL, res.Attempts)
		}
	}
	if seen, _ := site.snapshot(); len(seen) != len(urls) {
		t.Errorf("site served %d paths, want %d", len(seen), len(urls))
	}
	sum := readSummary(t, out)
	failed := map[string]bool{}
	for _, e := range sum.PerExit {
		if e.Name != good.Addr() && e.Requests > 0 && e.Done == 0 {
			failed[e.Name] = true
		}
	}
	for _, bad := range []string{garbage, silent, socks} {
		if !failed[bad] {
			t.Errorf("summary per_exit: broken exit %s not shown tried and failing: %+v", bad, sum.PerExit)
		}
		// Said when it first failed, once: a pool dying exit by exit went
		// half a minute without a word.
		said := 0
		for _, line := range strings.Split(r.stderr, "\n") {
			if strings.Contains(line, "exit failing as a proxy") && strings.Contains(line, "exit="+bad+" ") {
				said++
			}
		}
		if said != 1 {
			t.Errorf("stderr says %d times that exit %s failed as a proxy, want once:\n%s", said, bad, r.stderr)
		}
	}
}
