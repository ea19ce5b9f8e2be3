package run

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/exitgate/exitgate/internal/chart"
)

// SVG writes a chart of one scenario: successes per second (top, linear,
// with the server's allowed rate dashed) and 429s per second (bottom,
// log10(1+x) scale) over time, one line per strategy, averaged over
// windows of about 1/150 of the time axis. The time axis ends at the slowest
// finish, but at most at 3 × exitgate's finish (or the median finish when
// exitgate did not run), so the slow baselines do not squash the rest; the
// legend gives the finish time of every strategy.
func SVG(w io.Writer, s ScenarioResult) error {
	const (
		width, height    = 960, 620
		left, right      = 70, 250
		top1, h1         = 50, 240
		top2, h2         = 340, 220
		plotW            = width - left - right
		points           = 150
		fontFamily       = "font-family=\"sans-serif\""
		allowedRateColor = "#444"
	)
	var fin []float64
	maxT := 0.0
	for _, r := range s.Results {
		fin = append(fin, r.SecondsToFinish)
		maxT = math.Max(maxT, r.SecondsToFinish)
	}
	sort.Float64s(fin)
	if eg, ok := find(s.Results, "exitgate"); ok {
		maxT = math.Min(maxT, 3*math.Max(eg.SecondsToFinish, 1))
	} else if len(fin) > 0 {
		maxT = math.Min(maxT, 3*math.Max(fin[len(fin)/2], 1))
	}
	maxT = math.Max(maxT, 1)
	allowed := 0.0
	series := make([][][2]float64, len(s.Results)) // per strategy: (t, ok/s), (t, 429/s)
	series429 := make([][][2]float64, len(s.Results))
	maxRate, max429 := 0.0, 0.0
	for i, r := range s.Results {
		allowed = math.Max(allowed, r.AllowedRate)
		if r.Bucket <= 0 || len(r.Timeline) == 0 {
			continue
		}
		bs := r.Bucket.Seconds()
		per := max(1, int(math.Round(maxT/points/bs)))
		for j := 0; j < len(r.Timeline); j += per {
			t := float64(j) * bs
			if t > maxT {
				break
			}
			ok, lim := 0.0, 0.0
			n := 0
			for k := j; k < j+per && k < len(r.Timeline); k++ {
				ok += float64(r.Timeline[k].OK)
				lim += float64(r.Timeline[k].Limited)
				n++
			}
			span := float64(n) * bs
			series[i] = append(series[i], [2]float64{t + span/2, ok / span})
			series429[i] = append(series429[i], [2]float64{t + span/2, lim / span})
			maxRate = math.Max(maxRate, ok/span)
			max429 = math.Max(max429, lim/span)
		}
	}
	yMax := chart.NiceCeil(math.Max(maxRate, allowed*1.1))
	l429Max := math.Ceil(math.Log10(1 + math.Max(max429, 1)))

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s font-size="12">`+"\n", width, height, width, height, fontFamily)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", left, chart.Esc(s.Name))
	fmt.Fprintf(&b, `<text x="%d" y="40" fill="#555">%s</text>`+"\n", left, chart.Esc(chart.Trim(s.Description, 120)))
	xOf := func(t float64) float64 { return left + t/maxT*plotW }
	xTicks := chart.TimeTicks(maxT, 6, xOf)
	cut := fin != nil && fin[len(fin)-1] > maxT // a slower strategy ran on past the axis

	// Panel 1: successes per second.
	y1 := func(v float64) float64 { return top1 + h1 - v/yMax*h1 }
	chart.Axes(&b, left, top1, plotW, h1, xTicks, chart.Ticks(yMax, chart.NiceStep(yMax, 5), y1, chart.Num), "successes / s")
	if allowed > 0 {
		chart.Reference(&b, left, plotW, y1(allowed), allowedRateColor, "allowed "+chart.Num(allowed)+"/s")
	}
	for i := range s.Results {
		chart.Line(&b, chart.Project(series[i], xOf, y1), chart.SeriesStyle(i, len(s.Results)))
	}
	if cut {
		chart.Break(&b, left+plotW, top1+h1, false)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555" text-anchor="end" font-size="11">time axis cut at %s (slowest finish %s)</text>`+"\n",
			left+plotW-4, top1+14, chart.Dur(maxT), chart.Dur(fin[len(fin)-1]))
	}
	// Panel 2: 429s per second, log scale.
	y2 := func(v float64) float64 { return top2 + h2 - math.Log10(1+v)/l429Max*h2 }
	chart.Axes(&b, left, top2, plotW, h2, xTicks, chart.LogTicks(int(l429Max), y2), "429s / s (log)")
	for i := range s.Results {
		chart.Line(&b, chart.Project(series429[i], xOf, y2), chart.SeriesStyle(i, len(s.Results)))
	}
	if cut {
		chart.Break(&b, left+plotW, top2+h2, false)
	}
	// Legend.
	lx := width - right + 20
	for i, r := range s.Results {
		y := top1 + 10 + i*34
		chart.LegendKey(&b, float64(lx), float64(y), chart.SeriesStyle(i, len(s.Results)))
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+34, y+4, chart.Esc(r.Strategy))
		note := fmt.Sprintf("%.0f%% util, %.1f%% 429, %s", 100*r.Utilization, 100*r.Ratio429, chart.Dur(r.SecondsToFinish))
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555" font-size="11">%s</text>`+"\n", lx+34, y+18, chart.Esc(note))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
