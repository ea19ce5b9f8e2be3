package fetch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/exitgate/exitgate/frontier/sqlite"
	"github.com/exitgate/exitgate/internal/urlfile"
	"github.com/exitgate/exitgate/limit"
)

// noopLimiter lets every request go at once through the one exit.
type noopLimiter struct{}

func (noopLimiter) Acquire(host string, _ limit.Want, now time.Time) (limit.Ticket, bool, time.Time, error) {
	return limit.Ticket{Host: host, Exit: "direct", At: now}, true, time.Time{}, nil
}
func (noopLimiter) Done(limit.Ticket, limit.Outcome, time.Time) {}
func (noopLimiter) Cancel(limit.Ticket, time.Time)              {}

// BenchmarkCrawlOneHost crawls one local site from a URL file of
// EXITGATE_CRAWL_URLS URLs (5,000,000 when set to 5M) with the crawl
// command's parts: the file loaded by urlfile.Push into a SQLite frontier
// on disk, the engine with 32 requests in flight, a no-op limiter. It
// reports the load's URLs/s and the crawl's req/s. Without
// EXITGATE_CRAWL_URLS it is skipped (a 5M crawl takes minutes):
//
//	EXITGATE_CRAWL_URLS=5M go test -run '^$' -bench CrawlOneHost -benchtime=1x -timeout 1h ./fetch
//
// EXITGATE_CRAWL_SECONDS bounds the crawl (the rest stays queued); the
// default crawls every URL.
func BenchmarkCrawlOneHost(b *testing.B) {
	n, err := crawlURLs(os.Getenv("EXITGATE_CRAWL_URLS"))
	if err != nil {
		b.Fatal(err)
	}
	if n == 0 {
		b.Skip("set EXITGATE_CRAWL_URLS (e.g. 5M) to crawl that many URLs of one local site")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "a small page body")
	}))
	defer srv.Close()
	dir := b.TempDir()
	list := filepath.Join(dir, "urls.txt")
	f, err := os.Create(list)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(w, "%s/catalog/item/%d?ref=list\n", srv.URL, i)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	ctx := context.Background()
	for b.Loop() {
		fr, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "frontier.db")})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		l, err := urlfile.Push(ctx, fr, list)
		added, bad := l.Added, l.Bad
		if err != nil || added != n || bad.Count() != 0 {
			b.Fatalf("urlfile.Push = %d, %d bad, %v; want %d", added, bad.Count(), err, n)
		}
		load := time.Since(start)
		core := NewCore(CoreConfig{Concurrency: 32}, fr, noopLimiter{}, nil)
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 32
		eng, err := NewEngine(EngineConfig{Exits: ExitMap(map[string]http.RoundTripper{"direct": tr})}, core)
		if err != nil {
			b.Fatal(err)
		}
		if s := os.Getenv("EXITGATE_CRAWL_SECONDS"); s != "" {
			secs, err := strconv.Atoi(s)
			if err != nil {
				b.Fatalf("EXITGATE_CRAWL_SECONDS=%q: %v", s, err)
			}
			time.AfterFunc(time.Duration(secs)*time.Second, eng.Stop)
		}
		start = time.Now()
		if err := eng.Run(ctx); err != nil {
			b.Fatal(err)
		}
		crawl := time.Since(start)
		c, _ := fr.Counts(ctx)
		fr.Close()
		b.ReportMetric(float64(n)/load.Seconds(), "load-URLs/s")
		b.ReportMetric(float64(c.Done)/crawl.Seconds(), "req/s")
		b.ReportMetric(float64(c.Done), "done")
		b.Logf("%d URLs loaded in %v; %d done in %v, %d left queued", n, load.Round(time.Millisecond), c.Done, crawl.Round(time.Millisecond), c.Queued)
		if c.Abandoned > 0 {
			b.Errorf("%d URLs abandoned", c.Abandoned)
		}
	}
}

// crawlURLs reads EXITGATE_CRAWL_URLS: a count, with an optional k or M.
func crawlURLs(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	mult := 1
	switch s[len(s)-1] {
	case 'k', 'K':
		mult, s = 1000, s[:len(s)-1]
	case 'm', 'M':
		mult, s = 1_000_000, s[:len(s)-1]
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("EXITGATE_CRAWL_URLS=%q: want a count such as 200k or 5M", s)
	}
	return v * mult, nil
}
