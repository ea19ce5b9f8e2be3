package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/exitgate/exitgate/frontier/frontiertest"
)

// fillOneHost writes n queued jobs of one host straight into the file with
// one INSERT ... SELECT (much faster than Push, so that the claim benchmarks
// can start from ten million jobs), then reopens the store so that its
// in-memory index is rebuilt from the file as on any Open.
func fillOneHost(tb testing.TB, path string, n int) *Store {
	tb.Helper()
	s, err := Open(ctx, Config{Path: path})
	if err != nil {
		tb.Fatal(err)
	}
	q := `INSERT INTO hosts(id, name) VALUES(1, 'one.example');
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM n WHERE i+1 < ?)
INSERT INTO jobs(key, method, host, state, due)
SELECT printf('https://one.example/catalog/item/%09d?ref=list', i), 'GET', 1, 1, 0 FROM n`
	if _, err := s.conn.ExecContext(ctx, q, n); err != nil {
		tb.Fatal(err)
	}
	s.Close()
	if s, err = Open(ctx, Config{Path: path}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkClaimOneHost claims 64 jobs at a time from one host with 10,000,
// 1,000,000 and (with EXITGATE_BENCH_10M=1) 10,000,000 jobs queued. Between
// claims the 64 jobs are released, untimed, so the queue keeps its size:
// the figure is what one claim costs at that size, which must not grow with
// it.
//
//	EXITGATE_BENCH_10M=1 go test -run '^$' -bench ClaimOneHost -benchtime=2000x ./frontier/sqlite
func BenchmarkClaimOneHost(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("queued=%d", n), func(b *testing.B) {
			if n > 1_000_000 && os.Getenv("EXITGATE_BENCH_10M") != "1" {
				b.Skip("set EXITGATE_BENCH_10M=1 for 10,000,000 queued jobs (a 2 GB file, about a minute to fill)")
			}
			s := fillOneHost(b, filepath.Join(b.TempDir(), "one.db"), n)
			b.ReportAllocs()
			for b.Loop() {
				js, err := s.Claim(ctx, frontiertest.T0, 64, nil)
				if err != nil || len(js) != 64 {
					b.Fatalf("Claim(64) = %d jobs, %v", len(js), err)
				}
				b.StopTimer()
				for _, j := range js {
					if err := s.Release(ctx, j.Lease()); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
			}
		})
	}
}
