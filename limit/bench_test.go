package limit_test

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/exitgate/exitgate/limit"
)

// BenchmarkXTimeRateAllow is the reference: one x/time/rate limiter, one key.
func BenchmarkXTimeRateAllow(b *testing.B) {
	l := rate.NewLimiter(rate.Inf, 1)
	b.ReportAllocs()
	for b.Loop() {
		l.Allow()
	}
}

func benchLimiter(b *testing.B, exits int) *limit.Limiter {
	b.Helper()
	// A fast first guess so lanes are ready again quickly in virtual time.
	l, err := limit.New(limit.Config{FirstGuess: limit.PerSecond(1000), MaxInFlight: 1 << 20, HostConcurrency: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	es := make([]limit.Exit, exits)
	for i := range es {
		es[i].ID = fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255)
	}
	l.SetExits(es)
	return l
}

func benchAcquireDone(b *testing.B, hosts, exits int) {
	l := benchLimiter(b, exits)
	names := make([]string, hosts)
	for i := range names {
		names[i] = fmt.Sprintf("host%d.example", i)
	}
	now := time.Unix(1_800_000_000, 0)
	// Advance the clock so that each lane is ready again by its next turn
	// (1000/s per lane, hosts*exits lanes visited round-robin): the figure is
	// then the cost of granting, not of refusing.
	step := max(time.Nanosecond, time.Duration(1.2*float64(time.Millisecond)/float64(hosts*exits)))
	i, refused := 0, 0
	// Warm up: create every lane first, so the figure is the steady state
	// and not lane creation.
	for range hosts * exits {
		now = now.Add(step)
		if tk, ok, _, _ := l.Acquire(names[i%hosts], limit.Want{}, now); ok {
			l.Done(tk, limit.Outcome{}, now)
		}
		i++
	}
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(step)
		tk, ok, _, err := l.Acquire(names[i%hosts], limit.Want{}, now)
		if err != nil {
			b.Fatal(err)
		}
		if ok {
			l.Done(tk, limit.Outcome{}, now)
		} else {
			refused++
		}
		i++
	}
	b.ReportMetric(float64(refused)/float64(b.N), "refused/op")
}

func BenchmarkAcquireDone(b *testing.B) {
	for _, c := range []struct{ hosts, exits int }{{1, 100}, {1, 10_000}, {1000, 100}} {
		b.Run(fmt.Sprintf("hosts=%d/exits=%d", c.hosts, c.exits), func(b *testing.B) {
			benchAcquireDone(b, c.hosts, c.exits)
		})
	}
}

func BenchmarkAcquireDoneParallel(b *testing.B) {
	for _, c := range []struct{ hosts, exits int }{{1, 10_000}, {1000, 100}} {
		b.Run(fmt.Sprintf("hosts=%d/exits=%d", c.hosts, c.exits), func(b *testing.B) {
			l := benchLimiter(b, c.exits)
			names := make([]string, c.hosts)
			for i := range names {
				names[i] = fmt.Sprintf("host%d.example", i)
			}
			base := time.Unix(1_800_000_000, 0)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					now := base.Add(time.Duration(i) * time.Microsecond)
					tk, ok, _, _ := l.Acquire(names[i%c.hosts], limit.Want{}, now)
					if ok {
						l.Done(tk, limit.Outcome{}, now)
					}
					i++
				}
			})
		})
	}
}
