package main

import (
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/exitgate/exitgate/internal/peertest"
)

// brokenProxy listens on loopback and plays a broken proxy until the test
// ends: "garbage" answers any connection with bytes of no protocol, "silent"
// accepts and never answers, "socks-reject" is a SOCKS5 server that asks for
// a user name and password and refuses any.
func brokenProxy(t *testing.T, mode string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	serve := func(c net.Conn) {
		switch mode {
		case "garbage":
			c.Write([]byte("\x00\x17 not a proxy at all \xff\r\n\r\n"))
		case "socks-reject":
			var b [258]byte
			if _, err := io.ReadFull(c, b[:2]); err != nil || b[0] != 5 {
				break
			}
			io.ReadFull(c, b[:b[1]])
			c.Write([]byte{5, 2}) // username/password, please
			io.ReadFull(c, b[:2]) // version 1, user length
			io.ReadFull(c, b[:b[1]])
			io.ReadFull(c, b[:1]) // password length
			io.ReadFull(c, b[:b[0]])
			c.Write([]byte{1, 1}) // refused
			c.Close()
			return
		}
		io.Copy(io.Discard, c) // "silent": read, never answer
	}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { serve(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

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
	garbage, silent, socks := brokenProxy(t, "garbage"), brokenProxy(t, "silent"), brokenProxy(t, "socks-reject")
	proxies := writeLines(t, dir, "proxies.txt", []string{
		"http://" + garbage,
		"http://" + silent,
		"socks5://user:pw@" + socks,
		good.URL(),
	})
	urls := siteURLs(srv.URL, 40)
	urlFile := writeLines(t, dir, "urls.txt", urls)
	out := filepath.Join(dir, "out")
	r := runCrawlCmd(t, 60*time.Second, "crawl", "--proxies", proxies, "--out", out, "--lane-rate", "50/s",
		"--concurrency", "8", "--timeout", "2s", "--max-retries", "2", "--ignore-robots", "--progress", "0", urlFile)
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
	}
}
