package limit_test

import (
	"testing"
	"time"

	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/verdict"
)

// BenchmarkAcquireDoneOutcomes is Acquire+Done on 1 host × 100 exits with
// the outcomes a crawl reports, not only a bare success: a success that
// declares its quota (RateLimit headers), and a success with a 429 every
// 100th request. allocs/op is the figure: the steady state allocates
// nothing.
func BenchmarkAcquireDoneOutcomes(b *testing.B) {
	for _, c := range []struct {
		name string
		out  func(i int) limit.Outcome
	}{
		{"ok", func(int) limit.Outcome { return limit.Outcome{Verdict: verdict.OK} }},
		{"declared", func(i int) limit.Outcome {
			return limit.Outcome{Verdict: verdict.OK, Quota: 1000, Window: time.Second, Remaining: float64(999 - i%1000), HasRemaining: true, HasReset: true, ResetIn: time.Second}
		}},
		{"throttled-1pct", func(i int) limit.Outcome {
			if i%100 == 99 {
				return limit.Outcome{Verdict: verdict.Throttled, RetryAfter: time.Millisecond}
			}
			return limit.Outcome{Verdict: verdict.OK}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			l := benchLimiter(b, 100)
			now := time.Unix(1_800_000_000, 0)
			step := 12 * time.Microsecond
			i := 0
			run := func() {
				now = now.Add(step)
				if tk, ok, _, _ := l.Acquire("host.example", limit.Want{}, now); ok {
					l.Done(tk, c.out(i), now)
				}
				i++
			}
			for range 100_000 { // lanes made, learning settled
				run()
			}
			b.ReportAllocs()
			for b.Loop() {
				run()
			}
		})
	}
}
