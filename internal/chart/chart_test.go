package chart

import (
	"strings"
	"testing"
)

func TestSteps(t *testing.T) {
	for _, tt := range []struct {
		max  float64
		n    int
		nice float64
		time float64
	}{
		{120, 6, 20, 20},
		{60, 6, 10, 10},
		{2000, 6, 500, 600},
		{25, 5, 5, 5},
		{7, 5, 2, 2},
		{0.9, 4, 0.25, 1},
		{86400, 6, 20000, 21600},
		{0, 5, 1, 1},
	} {
		if got := NiceStep(tt.max, tt.n); got != tt.nice {
			t.Errorf("NiceStep(%v, %d) = %v, want %v", tt.max, tt.n, got, tt.nice)
		}
		if got := TimeStep(tt.max, tt.n); got != tt.time {
			t.Errorf("TimeStep(%v, %d) = %v, want %v", tt.max, tt.n, got, tt.time)
		}
	}
}

func TestTicks(t *testing.T) {
	ticks := Ticks(120, 20, func(v float64) float64 { return v * 2 }, Dur)
	var labels []string
	for _, tk := range ticks {
		labels = append(labels, tk.Label)
	}
	if got, want := strings.Join(labels, " "), "0s 20s 40s 60s 80s 100s 2m"; got != want {
		t.Errorf("Ticks(120, 20) labels = %q, want %q", got, want)
	}
	if ticks[6].Pos != 240 {
		t.Errorf("last tick at %v, want 240", ticks[6].Pos)
	}
}

func TestNiceCeil(t *testing.T) {
	for _, tt := range []struct{ in, want float64 }{{22, 25}, {20, 20}, {0.7, 0.8}, {101, 150}, {0, 1}} {
		if got := NiceCeil(tt.in); got != tt.want {
			t.Errorf("NiceCeil(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
