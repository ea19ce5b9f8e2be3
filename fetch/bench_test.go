package fetch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/frontier/memory"
	"github.com/exitgate/exitgate/frontier/sqlite"
	"github.com/exitgate/exitgate/limit"
	"path/filepath"
)

// The engine's overhead against a bare net/http client: both fetch the same
// b.N URLs from one local server with 8 requests in flight. The engine's
// limiter is set far above what the server can do, so what is measured is
// the cost of the frontier, the limiter, header parsing and classification.
const benchConcurrency = 8

func benchServer(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "a small page body")
	}))
	b.Cleanup(srv.Close)
	return srv
}

func BenchmarkThroughputBareClient(b *testing.B) {
	srv := benchServer(b)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = benchConcurrency
	client := &http.Client{Transport: tr}
	b.ReportAllocs()
	start := time.Now()
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range benchConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				resp, err := client.Get(fmt.Sprintf("%s/%d", srv.URL, i))
				if err != nil {
					b.Error(err)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	for i := 0; i < b.N; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// flatOut is a limiter configuration that never holds the engine back.
var flatOut = limit.Config{FirstGuess: limit.PerSecond(1e6), LaneBurst: 1000}

func BenchmarkThroughputEngine(b *testing.B) {
	fr, err := memory.New(memory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	benchEngine(b, fr, flatOut)
}

// BenchmarkThroughputEngineSQLite is the engine flat out on the SQLite
// frontier the crawl command uses, with the default durability and with
// every commit fsynced (--durable). ops/commit is how many settled jobs
// share a commit: concurrent completions are committed together.
func BenchmarkThroughputEngineSQLite(b *testing.B) {
	for _, m := range []struct {
		name string
		sync sqlite.Sync
	}{{"normal", sqlite.SyncNormal}, {"durable", sqlite.SyncFull}} {
		b.Run(m.name, func(b *testing.B) {
			fr, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(b.TempDir(), "f.db"), Sync: m.sync})
			if err != nil {
				b.Fatal(err)
			}
			defer fr.Close()
			benchEngine(b, fr, flatOut)
			st := fr.Stats()
			b.ReportMetric(float64(st.Changes)/float64(max(1, st.Commits)), "ops/commit")
		})
	}
}

// benchEngine fetches b.N URLs of the bench server through fr and a limiter
// configured by cfg, with one direct exit, and reports requests per second.
func benchEngine(b *testing.B, fr frontier.Frontier, cfg limit.Config) {
	srv := benchServer(b)
	ctx := context.Background()
	jobs := make([]frontier.NewJob, b.N)
	for i := range jobs {
		jobs[i] = frontier.NewJob{URL: fmt.Sprintf("%s/%d", srv.URL, i)}
	}
	if _, err := fr.Push(ctx, jobs); err != nil {
		b.Fatal(err)
	}
	lim, err := limit.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	lim.SetExits([]limit.Exit{{ID: "direct"}})
	core := NewCore(CoreConfig{Concurrency: benchConcurrency}, fr, lim, nil)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = benchConcurrency
	eng, err := NewEngine(EngineConfig{Exits: ExitMap(map[string]http.RoundTripper{"direct": tr})}, core)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if err := eng.Run(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	if c, _ := fr.Counts(ctx); c.Done != b.N {
		b.Fatalf("done %d of %d", c.Done, b.N)
	}
}

// At a paced 500 requests/s both should achieve the offered rate; the
// difference is the engine's throughput loss at that load.
const pacedRate = 500

func BenchmarkPaced500BareClient(b *testing.B) {
	srv := benchServer(b)
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	tick := time.NewTicker(time.Second / pacedRate)
	defer tick.Stop()
	var wg sync.WaitGroup
	sem := make(chan struct{}, benchConcurrency)
	start := time.Now()
	for i := 0; i < b.N; i++ {
		<-tick.C
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			resp, err := client.Get(fmt.Sprintf("%s/%d", srv.URL, i))
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// pacedLimit paces the engine with the host ceiling, as the ticker paces the
// bare client; lanes are set far above it so that only the ceiling binds.
var pacedLimit = limit.Config{FirstGuess: limit.PerSecond(1e6), MaxLaneRate: limit.PerSecond(1e6), HostCeiling: limit.PerSecond(pacedRate)}

func BenchmarkPaced500Engine(b *testing.B) {
	fr, err := memory.New(memory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	benchEngine(b, fr, pacedLimit)
}

// The same with the durable SQLite frontier the crawl command uses.
func BenchmarkPaced500EngineSQLite(b *testing.B) {
	fr, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(b.TempDir(), "f.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer fr.Close()
	benchEngine(b, fr, pacedLimit)
}
