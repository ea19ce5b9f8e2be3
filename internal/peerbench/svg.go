package peerbench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/exitgate/exitgate/internal/chart"
)

// SVG writes one target's timeline from its server's log: successes per
// second (top, linear, with the allowed rate dashed) and 429s per second
// (bottom, log10(1+x) scale), one line per strategy, averaged over buckets
// of about 1/60 of the run (2 s for 120 s) or one exit's request interval,
// whichever is longer (up to 10 s). Lines are drawn widest first and
// thinner after, each with its own dash and marker (chart.SeriesStyle), so
// that a strategy whose line coincides with another's still shows; a
// success axis cut short of a start-up burst has a break mark.
func SVG(w io.Writer, t Target, exits int, results []Result) error {
	const (
		width, height = 1000, 640
		left, right   = 70, 310
		top1, h1      = 70, 240
		top2, h2      = 360, 220
		plotW         = width - left - right
		allowedColor  = "#444"
	)
	span := 0.0
	for _, r := range results {
		span = math.Max(span, r.DurationSeconds)
	}
	span = math.Max(span, 1)
	// Seconds per point: about 1/60 of the run, and at least one exit's
	// request interval (up to 10 s), so that a slow limit paced in step
	// across exits does not read as a comb.
	per := max(1, int(math.Round(span/60)), min(10, int(math.Round(1/t.Rate))))
	allowed := t.Rate * float64(exits)
	type series struct{ ok, limited [][2]float64 }
	all := make([]series, len(results))
	maxRate, max429 := 0.0, 0.0
	for i, r := range results {
		tl := r.Server.Timeline
		bs := r.Server.Bucket
		if bs <= 0 {
			continue
		}
		n := max(1, int(math.Round(float64(per)/bs)))
		for j := 0; j < len(tl); j += n {
			ok, lim, k := 0, 0, j
			for ; k < j+n && k < len(tl); k++ {
				ok += tl[k].OK
				lim += tl[k].Limited
			}
			sec := float64(k-j) * bs
			mid := float64(j)*bs + sec/2
			all[i].ok = append(all[i].ok, [2]float64{mid, float64(ok) / sec})
			all[i].limited = append(all[i].limited, [2]float64{mid, float64(lim) / sec})
			maxRate = math.Max(maxRate, float64(ok)/sec)
			max429 = math.Max(max429, float64(lim)/sec)
		}
	}
	// A start-up burst (a baseline's first second) would squash the rest:
	// the axis stops at the 98th percentile of the points (at least 1.5 ×
	// the allowed rate), and lines above it run along the top edge.
	var rates []float64
	for _, se := range all {
		for _, p := range se.ok {
			rates = append(rates, p[1])
		}
	}
	slices.Sort(rates)
	top := maxRate
	if len(rates) > 0 {
		top = rates[len(rates)*98/100]
	}
	yMax := chart.NiceCeil(math.Max(top, allowed*1.5))
	clipped := maxRate > yMax
	l429Max := math.Ceil(math.Log10(1 + math.Max(max429, 1)))

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold">%s: successes and 429s per second, %d exits (server log)</text>`+"\n", left, chart.Esc(t.Name), exits)
	desc := fmt.Sprintf("%s: %d per %s per IP, burst %d; Retry-After: %s; headers: %s",
		t.Server, t.Limit, fmtWindow(t.Window), t.Burst, t.RetryAfter, t.Headers)
	fmt.Fprintf(&b, `<text x="%d" y="42" fill="#555">%s</text>`+"\n", left, chart.Esc(chart.Trim(desc, 140)))
	fmt.Fprintf(&b, `<text x="%d" y="58" fill="#555">%s</text>`+"\n", left, chart.Esc(chart.Trim(t.Algorithm+fmt.Sprintf("; each point is a %d s mean", per), 140)))

	xOf := func(s float64) float64 { return left + s/span*plotW }
	xTicks := chart.TimeTicks(span, 6, xOf)
	y1 := func(v float64) float64 { return top1 + h1 - math.Min(v, yMax)/yMax*h1 }
	chart.Axes(&b, left, top1, plotW, h1, xTicks, chart.Ticks(yMax, chart.NiceStep(yMax, 5), y1, chart.Num), "successes / s")
	chart.Reference(&b, left, plotW, y1(allowed), allowedColor, "allowed "+chart.Num(allowed)+"/s")
	if clipped {
		chart.Break(&b, left, top1+10, true)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555" text-anchor="end" font-size="11">cut at %s/s (peak %s/s)</text>`+"\n", left+plotW-4, top1+14, chart.Num(yMax), chart.Num(maxRate))
	}
	for i := range results {
		chart.Line(&b, chart.Project(all[i].ok, xOf, y1), chart.SeriesStyle(i, len(results)))
	}
	y2 := func(v float64) float64 { return top2 + h2 - math.Log10(1+v)/l429Max*h2 }
	chart.Axes(&b, left, top2, plotW, h2, xTicks, chart.LogTicks(int(l429Max), y2), "429s / s (log)")
	for i := range results {
		chart.Line(&b, chart.Project(all[i].limited, xOf, y2), chart.SeriesStyle(i, len(results)))
	}
	lx := width - right + 20
	for i, r := range results {
		y := top1 + 6 + i*36
		chart.LegendKey(&b, float64(lx), float64(y), chart.SeriesStyle(i, len(results)))
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+34, y+4, chart.Esc(r.Strategy))
		note := "failed"
		if r.Error == "" {
			note = fmt.Sprintf("%.0f%% util (%s after 60 s), %.1f%% 429", 100*r.Server.Utilization, after(r.Server.UtilizationAfter60, r.Server.Seconds, 60), 100*r.Server.Ratio429)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555" font-size="11">%s</text>`+"\n", lx+34, y+18, chart.Esc(note))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
