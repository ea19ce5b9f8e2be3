package chart

import (
	"math"
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
	ticks := Ticks(120, 20, func(v float64) float64 { return v * 2 }, TimeLabel(20))
	if got, want := labels(ticks), "0 20s 40s 60s 80s 100s 120s"; got != want {
		t.Errorf("Ticks(120, 20) labels = %q, want %q", got, want)
	}
	if ticks[6].Pos != 240 {
		t.Errorf("last tick at %v, want 240", ticks[6].Pos)
	}
}

func labels(ticks []Tick) string {
	var ls []string
	for _, tk := range ticks {
		ls = append(ls, tk.Label)
	}
	return strings.Join(ls, " ")
}

// TestTimeTicksRound: a time axis's labels are round, in one unit, and
// distinct (the labels of a 3-minute axis used to read "90s 2m 2m 3m", 150 s
// rounding to "2m").
func TestTimeTicksRound(t *testing.T) {
	id := func(v float64) float64 { return v }
	for _, tt := range []struct {
		max  float64
		want string
	}{
		{180, "0 30s 60s 90s 120s 150s 180s"},
		{137, "0 30s 60s 90s 120s"},
		{600, "0 2m 4m 6m 8m 10m"},
		{7200, "0 20m 40m 60m 80m 100m 120m"},
		{86400, "0 6h 12h 18h 24h"},
		{9.5, "0 2s 4s 6s 8s"},
	} {
		if got := labels(TimeTicks(tt.max, 6, id)); got != tt.want {
			t.Errorf("TimeTicks(%v) = %q, want %q", tt.max, got, tt.want)
		}
	}
}

// TestNiceAxisEndsOnATick: a y axis topped with NiceCeil and divided with
// NiceStep has a tick at its top, whatever the data's maximum.
func TestNiceAxisEndsOnATick(t *testing.T) {
	for _, v := range []float64{0.07, 0.9, 1.2, 1.7, 2.2, 2.7, 3.5, 4.5, 5.5, 7, 9, 14, 22, 27, 33, 45, 55, 65, 90, 140, 230, 370, 520, 790, 1300} {
		top := NiceCeil(v)
		ticks := Ticks(top, NiceStep(top, 5), func(x float64) float64 { return x }, Num)
		last := ticks[len(ticks)-1].Pos
		if math.Abs(last-top) > top*1e-9 || len(ticks) < 3 {
			t.Errorf("NiceCeil(%v) = %v: ticks %s end at %v", v, top, labels(ticks), last)
		}
	}
}

func TestDur(t *testing.T) {
	for _, tt := range []struct {
		sec  float64
		want string
	}{{0, "0"}, {45.4, "45s"}, {90, "1m30s"}, {150, "2m30s"}, {3900, "1h5m"}, {7200, "2h"}, {108000, "1d6h"}} {
		if got := Dur(tt.sec); got != tt.want {
			t.Errorf("Dur(%v) = %q, want %q", tt.sec, got, tt.want)
		}
	}
}

// TestCoincidingSeriesStayVisible: two series drawn over the same points
// differ in dash, width and marker shape, and mark different points, so
// both show.
func TestCoincidingSeriesStayVisible(t *testing.T) {
	pts := make([][2]float64, 40)
	for i := range pts {
		pts[i] = [2]float64{float64(i * 10), 100}
	}
	var a, b strings.Builder
	sa, sb := SeriesStyle(0, 8), SeriesStyle(1, 8)
	Line(&a, pts, sa)
	Line(&b, pts, sb)
	if sa.Dash == sb.Dash || sa.Marker == sb.Marker || sa.Width <= sb.Width {
		t.Errorf("styles %+v and %+v: want different dashes and markers, the first wider", sa, sb)
	}
	count := func(st Style) int { return (len(pts) - st.MarkOffset + st.MarkEvery - 1) / st.MarkEvery }
	if got, want := strings.Count(a.String(), "<circle"), count(sa); got != want || want < 2 {
		t.Errorf("series 0 drew %d circles, want %d", got, want)
	}
	if got, want := strings.Count(b.String(), "<rect"), count(sb); got != want || want < 2 {
		t.Errorf("series 1 drew %d squares, want %d", got, want)
	}
	for i := range 8 {
		for j := range i {
			si, sj := SeriesStyle(i, 8), SeriesStyle(j, 8)
			if si.Dash == sj.Dash && si.Marker == sj.Marker {
				t.Errorf("series %d and %d look alike but for colour", i, j)
			}
			if si.MarkOffset%si.MarkEvery == sj.MarkOffset%sj.MarkEvery {
				t.Errorf("series %d and %d mark the same points", i, j)
			}
		}
	}
}

func TestBreakDrawn(t *testing.T) {
	var b strings.Builder
	Break(&b, 70, 70, true)
	Break(&b, 690, 310, false)
	if n := strings.Count(b.String(), "<line"); n != 4 {
		t.Errorf("two breaks drew %d lines, want 4:\n%s", n, b.String())
	}
}

func TestNiceCeil(t *testing.T) {
	for _, tt := range []struct{ in, want float64 }{{22, 25}, {20, 20}, {0.7, 0.8}, {101, 150}, {0, 1}} {
		if got := NiceCeil(tt.in); got != tt.want {
			t.Errorf("NiceCeil(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
