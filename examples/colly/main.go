// Command colly crawls with Colly (github.com/gocolly/colly/v2) through
// exitgate's rate-limit-aware Transport, and loses no URL to the wait.
//
// Colly's HTTP client times requests out after 10 s, and that clock runs
// while the Transport waits for a lane of the host: with more URLs queued
// than the lanes can send within 10 s, the tail used to be lost ("Client.
// Timeout exceeded"), 13 of 300 in one measured run. The Transport now gives
// up a wait that cannot end before the deadline (less a quarter kept for the
// request) with a *fetch.WaitError, sending nothing; OnError retries those,
// and 429s too (the limiter has cooled that lane; the retry goes through
// another exit), up to -retries times.
//
// It lives in a module of its own so that Colly and its dependencies stay
// out of exitgate's go.mod. Run it from this directory:
//
//	go run . -n 300                       # a local site on 127.0.0.1, two loopback exits
//	go run . -n 300 -retries 0            # without the retry: URLs are lost
//	go run . -proxies proxies.txt -urls urls.txt
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocolly/colly/v2"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/pool"
)

// config is one crawl.
type config struct {
	URLs    []string
	Exits   []pool.Exit
	Limit   limit.Config
	Timeout time.Duration // Colly's request timeout; zero: Colly's 10 s
	Retries int           // per URL, for *fetch.WaitError and 429
	Reserve time.Duration // fetch.Transport.Reserve; negative: wait into the deadline
}

// result is what became of the URLs.
type result struct {
	OK         int
	Lost       []string // URLs that ended in an error
	Retries    int      // requests sent again (or asked for again after a WaitError)
	WaitErrors int      // waits given up before the deadline: nothing sent
	Throttled  int      // 429s
	Down       int      // URLs lost because every exit was failing as a proxy
	Elapsed    time.Duration
}

func crawl(cfg config) (result, error) {
	rt, err := fetch.NewTransport(cfg.Exits, fetch.TransportConfig{Limit: cfg.Limit})
	if err != nil {
		return result{}, err
	}
	rt.Reserve = cfg.Reserve
	c := colly.NewCollector(colly.Async(true))
	c.WithTransport(rt)
	defer rt.CloseIdleConnections()
	if cfg.Timeout > 0 {
		c.SetRequestTimeout(cfg.Timeout)
	}

	var (
		mu  sync.Mutex
		res result
	)
	var retries, waitErrs, throttled atomic.Int64
	c.OnResponse(func(r *colly.Response) {
		mu.Lock()
		res.OK++
		mu.Unlock()
	})
	c.OnError(func(r *colly.Response, err error) {
		var we *fetch.WaitError
		isWait := errors.As(err, &we)
		if isWait {
			waitErrs.Add(1)
		}
		if r.StatusCode == http.StatusTooManyRequests {
			throttled.Add(1)
		}
		// Every exit failing as a proxy: no wait helps (Next is the end
		// of a quarantine, 30 s and doubling, for every URL of the list),
		// so the URL is lost at once and said so.
		down := isWait && we.AllExitsDown()
		if down {
			mu.Lock()
			res.Down++
			mu.Unlock()
		}
		if (isWait || r.StatusCode == http.StatusTooManyRequests) && !down && failures(r.Ctx) <= cfg.Retries {
			if isWait && !we.Next.IsZero() {
				// No lane of the host frees up before Next: nothing was
				// sent, so wait here (not holding any slot) and ask again.
				time.Sleep(time.Until(we.Next))
			}
			retries.Add(1)
			if err := r.Request.Retry(); err == nil {
				return
			}
		}
		mu.Lock()
		res.Lost = append(res.Lost, r.Request.URL.String())
		mu.Unlock()
	})

	start := time.Now()
	for _, u := range cfg.URLs {
		if err := c.Visit(u); err != nil {
			return result{}, fmt.Errorf("visit %s: %w", u, err)
		}
	}
	c.Wait()
	res.Elapsed = time.Since(start)
	res.Retries, res.WaitErrors, res.Throttled = int(retries.Load()), int(waitErrs.Load()), int(throttled.Load())
	return res, nil
}

// failures counts the failed attempts of one URL in its Colly context
// (which a retry keeps) and returns the count, this one included.
func failures(ctx *colly.Context) int {
	n, _ := ctx.GetAny("exitgate-attempt").(int)
	n++
	ctx.Put("exitgate-attempt", n)
	return n
}

func main() {
	n := flag.Int("n", 300, "URLs of the local demo site to crawl (without -urls)")
	urlFile := flag.String("urls", "", "file of URLs to crawl, one per line (default: the local demo site)")
	proxies := flag.String("proxies", "", "proxy list, as exitgate crawl --proxies takes it (default: two loopback source addresses)")
	rate := flag.String("host-rate", "20/s", "politeness ceiling per host")
	lane := flag.String("lane-rate", "10/s", "first guess of each lane's rate")
	timeout := flag.Duration("timeout", 0, "Colly's request timeout (default Colly's 10s)")
	retries := flag.Int("retries", 20, "retries per URL after a *fetch.WaitError or a 429; 0: none")
	reserve := flag.Duration("reserve", 0, "fetch.Transport.Reserve (0: a quarter of the time left; negative: wait into the deadline, as before)")
	flag.Parse()
	if *n < 1 || *retries < 0 || *timeout < 0 {
		// (-n -5 panicked making its list.)
		fmt.Fprintln(os.Stderr, "-n wants 1 or more, -retries 0 or more, -timeout 0 or more")
		os.Exit(2)
	}

	cfg := config{Timeout: *timeout, Retries: *retries, Reserve: *reserve}
	var err error
	if cfg.Limit.HostCeiling, err = limit.ParseRate(*rate); err != nil {
		log.Fatal(err)
	}
	if cfg.Limit.FirstGuess, err = limit.ParseRate(*lane); err != nil {
		log.Fatal(err)
	}
	exitList := "bind:127.0.0.11-127.0.0.12"
	if *proxies != "" {
		cfg.Exits, err = pool.ParseFile(*proxies)
	} else {
		cfg.Exits, err = pool.Parse(strings.NewReader(exitList), "exits")
	}
	if err != nil {
		log.Fatal(err)
	}
	if *urlFile != "" {
		if cfg.URLs, err = readURLs(*urlFile); err != nil {
			log.Fatal(err)
		}
	} else {
		site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintln(w, "<html><body>page</body></html>")
		}))
		defer site.Close()
		cfg.URLs = demoURLs(site.URL, *n)
	}
	res, err := crawl(cfg)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d URLs in %s: %d ok, %d lost; %d retries (%d waits given up before the deadline, %d 429s)\n",
		len(cfg.URLs), res.Elapsed.Round(100*time.Millisecond), res.OK, len(res.Lost), res.Retries, res.WaitErrors, res.Throttled)
	if res.Down > 0 {
		fmt.Printf("%d of them lost because every exit was failing as a proxy: check them with exitgate proxies check\n", res.Down)
	}
	if len(res.Lost) > 0 {
		os.Exit(1)
	}
}

func demoURLs(base string, n int) []string {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/page/%d", base, i)
	}
	return urls
}

func readURLs(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var urls []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if u := strings.TrimSpace(sc.Text()); u != "" && !strings.HasPrefix(u, "#") {
			urls = append(urls, u)
		}
	}
	return urls, sc.Err()
}
