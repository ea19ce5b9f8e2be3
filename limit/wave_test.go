package limit

import (
	"testing"
	"time"
)

func TestForbiddenWave(t *testing.T) {
	s := int64(time.Second)
	type hit struct {
		url uint64
		at  int64
	}
	tests := []struct {
		name string
		hits []hit
		want []bool // after each hit
	}{
		{"one forbidden URL is no wave", []hit{{1, 0}}, []bool{false}},
		{"the same URL again and again", []hit{{1, 0}, {1, s}, {1, 2 * s}, {1, 3 * s}}, []bool{false, false, false, false}},
		{"three URLs within the span", []hit{{1, 0}, {2, 10 * s}, {3, 20 * s}}, []bool{false, false, true}},
		{"three URLs, one a repeat", []hit{{1, 0}, {2, s}, {1, 2 * s}, {3, 3 * s}}, []bool{false, false, false, true}},
		{"spread wider than the span", []hit{{1, 0}, {2, 40 * s}, {3, 61 * s}}, []bool{false, false, false}},
		{"the window slides", []hit{{1, 0}, {2, 40 * s}, {3, 61 * s}, {4, 62 * s}}, []bool{false, false, false, true}},
		{"unknown URLs count each", []hit{{0, 0}, {0, s}, {0, 2 * s}}, []bool{false, false, true}},
	}
	for _, tt := range tests {
		var w wave
		for i, h := range tt.hits {
			if got := forbiddenWave(&w, h.url, 1, h.at, waveSpan, waveURLs); got != tt.want[i] {
				t.Errorf("%s: forbiddenWave(hit %d: url %d at %v) = %v, want %v", tt.name, i, h.url, time.Duration(h.at), got, tt.want[i])
			}
		}
	}
}

// A wave's pace is the fastest its requests went at: the one that ran the
// count out, where the lane slowed or took the search while its answers
// came back refused.
func TestWavePace(t *testing.T) {
	var w wave
	for i, p := range []float64{7.5, 5.4, 5.4} {
		forbiddenWave(&w, uint64(i+1), p, int64(i)*int64(time.Millisecond), waveSpan, waveURLs)
	}
	if got := w.pace(); got != 7.5 {
		t.Errorf("pace = %v, want 7.5", got)
	}
}
