package redisstate

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/exitgate/exitgate/internal/peertest"
)

// BenchmarkAdmit measures host-level decisions (one Admit script each) per
// second against one redis-server, which runs scripts on one core: with
// enough clients in parallel, ns/op is the server's time per decision.
//
//	go test -run '^$' -bench Admit -benchtime 3s ./redisstate
func BenchmarkAdmit(b *testing.B) {
	r := peertest.StartRedis(b)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr(), PoolSize: 64})
	b.Cleanup(func() { rdb.Close() })
	s, err := New(rdb, Config{Crawl: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	b.SetParallelism(16)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			// 1,000 hosts, a ceiling high enough that nothing waits.
			s.Admit(fmt.Sprintf("h%d.example", i%1000), 1e6, 0, time.Now())
		}
	})
	b.StopTimer()
	if st := s.Stats(); st.Fallbacks > 0 {
		b.Fatalf("%d admits fell back: Redis did not answer in time", st.Fallbacks)
	}
	// The server's own time per script call, from INFO commandstats: the
	// decisions one Redis core can make per second, whatever the clients.
	info, err := rdb.Info(b.Context(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:"); ok {
			for _, f := range strings.Split(rest, ",") {
				if v, ok := strings.CutPrefix(f, "usec_per_call="); ok {
					if us, err := strconv.ParseFloat(v, 64); err == nil && us > 0 {
						b.ReportMetric(1e6/us, "decisions/s/redis-core")
					}
				}
			}
		}
	}
}
