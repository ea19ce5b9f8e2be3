package backoff

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestCeiling(t *testing.T) {
	tests := []struct {
		p       Policy
		attempt int
		want    time.Duration
	}{
		{Policy{}, 0, DefaultBase},
		{Policy{}, 1, 2 * DefaultBase},
		{Policy{}, 3, 8 * DefaultBase},
		{Policy{}, 7, DefaultCap}, // 64 s > 60 s
		{Policy{Base: time.Second, Cap: 10 * time.Second}, 2, 4 * time.Second},
		{Policy{Base: time.Second, Cap: 10 * time.Second}, 4, 10 * time.Second},
		{Policy{Base: time.Second, Cap: 10 * time.Second}, -3, time.Second},
		{Policy{Base: time.Second, Cap: time.Hour}, 1000, time.Hour}, // no overflow
		{Policy{Base: time.Nanosecond, Cap: time.Hour}, 62, time.Hour},
	}
	for _, tt := range tests {
		if got := tt.p.Ceiling(tt.attempt); got != tt.want {
			t.Errorf("%+v.Ceiling(%d) = %v, want %v", tt.p, tt.attempt, got, tt.want)
		}
	}
}

func TestFullJitterStaysInRangeAndCoversIt(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	p := Policy{Base: 100 * time.Millisecond, Cap: time.Second}
	for attempt := range 8 {
		ceil := p.Ceiling(attempt)
		var lo, hi time.Duration = ceil, 0
		for range 2000 {
			d := p.Delay(r, attempt, 0)
			if d < 0 || d > ceil {
				t.Fatalf("Delay(attempt=%d) = %v, want within [0, %v]", attempt, d, ceil)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		// Uniform over [0, ceil]: 2000 draws land in the outer tenths.
		if lo > ceil/10 || hi < ceil*9/10 {
			t.Errorf("attempt %d: draws spanned [%v, %v], want most of [0, %v]", attempt, lo, hi, ceil)
		}
	}
}

func TestFullJitterIsReproducible(t *testing.T) {
	a := rand.New(rand.NewPCG(7, 7))
	b := rand.New(rand.NewPCG(7, 7))
	for i := range 50 {
		da := FullJitter(a, time.Second, time.Minute, i%10)
		db := FullJitter(b, time.Second, time.Minute, i%10)
		if da != db {
			t.Fatalf("draw %d: %v != %v with the same seed", i, da, db)
		}
	}
}

func TestDecorrelated(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	p := Policy{Kind: Decorrelated, Base: 100 * time.Millisecond, Cap: 2 * time.Second}
	var prev time.Duration
	for i := range 500 {
		d := p.Delay(r, i, prev)
		hi := min(p.Cap, 3*max(prev, p.Base))
		if d < p.Base || d > hi {
			t.Fatalf("step %d: Delay(prev=%v) = %v, want within [%v, %v]", i, prev, d, p.Base, hi)
		}
		prev = d
	}
}

func TestZeroWidthRange(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	p := Policy{Base: time.Second, Cap: time.Second}
	for attempt := range 3 {
		if d := p.Delay(r, attempt, 0); d < 0 || d > time.Second {
			t.Errorf("Delay(%d) = %v, want within [0, 1s]", attempt, d)
		}
	}
	dp := Policy{Kind: Decorrelated, Base: 5 * time.Second, Cap: time.Second}
	if d := dp.Delay(r, 0, 0); d != time.Second {
		t.Errorf("decorrelated with base > cap: Delay = %v, want the cap 1s", d)
	}
}

func BenchmarkFullJitter(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		FullJitter(r, time.Second, time.Minute, i&15)
		i++
	}
}
