package run

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// palette gives each strategy a distinct colour, in result order.
var palette = []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#17becf", "#bcbd22"}

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
	yMax := niceCeil(math.Max(maxRate, allowed*1.1))
	l429Max := math.Ceil(math.Log10(1 + math.Max(max429, 1)))

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s font-size="12">`+"\n", width, height, width, height, fontFamily)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", left, esc(s.Name))
	fmt.Fprintf(&b, `<text x="%d" y="40" fill="#555">%s</text>`+"\n", left, esc(trim(s.Description, 120)))
	xOf := func(t float64) float64 { return left + t/maxT*plotW }

	// Panel 1: successes per second.
	axes(&b, left, top1, plotW, h1, maxT, "successes / s", func(i int) (float64, string) {
		v := yMax * float64(i) / 4
		return top1 + h1 - v/yMax*h1, fmtNum(v)
	}, 5)
	if allowed > 0 {
		y := top1 + h1 - allowed/yMax*h1
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-dasharray="6 4"/>`+"\n", left, y, left+plotW, y, allowedRateColor)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="%s" text-anchor="end">allowed %s/s</text>`+"\n", left+plotW-4, y-4, allowedRateColor, fmtNum(allowed))
	}
	for i := range s.Results {
		line(&b, series[i], palette[i%len(palette)], func(p [2]float64) (float64, float64) {
			return xOf(p[0]), top1 + h1 - p[1]/yMax*h1
		})
	}
	// Panel 2: 429s per second, log scale.
	axes(&b, left, top2, plotW, h2, maxT, "429s / s (log)", func(i int) (float64, string) {
		v := 0.0
		if i > 0 {
			v = math.Pow(10, float64(i-1))
		}
		return top2 + h2 - math.Log10(1+v)/l429Max*h2, fmtNum(v)
	}, int(l429Max)+1)
	for i := range s.Results {
		line(&b, series429[i], palette[i%len(palette)], func(p [2]float64) (float64, float64) {
			return xOf(p[0]), top2 + h2 - math.Log10(1+p[1])/l429Max*h2
		})
	}
	// Legend.
	lx := width - right + 20
	for i, r := range s.Results {
		y := top1 + 10 + i*34
		c := palette[i%len(palette)]
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", lx, y, lx+24, y, c)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+30, y+4, esc(r.Strategy))
		note := fmt.Sprintf("%.0f%% util, %.1f%% 429, %s", 100*r.Utilization, 100*r.Ratio429, fmtDur(r.SecondsToFinish))
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555" font-size="11">%s</text>`+"\n", lx+30, y+18, esc(note))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func axes(b *strings.Builder, left, top, w, h int, maxT float64, label string, yTick func(int) (float64, string), nY int) {
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", left, top, w, h)
	for i := range nY {
		y, s := yTick(i)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", left+1, y, left+w-1, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" fill="#333">%s</text>`+"\n", left-6, y+4, s)
	}
	for i := 0; i <= 5; i++ {
		t := maxT * float64(i) / 5
		x := float64(left) + float64(w)*float64(i)/5
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#333">%s</text>`+"\n", x, top+h+16, fmtDur(t))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" transform="rotate(-90 %d %d)" text-anchor="middle" fill="#333">%s</text>`+"\n", 16, top+h/2, 16, top+h/2, esc(label))
}

func line(b *strings.Builder, pts [][2]float64, color string, xy func([2]float64) (float64, float64)) {
	if len(pts) == 0 {
		return
	}
	fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.6" stroke-linejoin="round" points="`, color)
	for i, p := range pts {
		x, y := xy(p)
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(b, "%.1f,%.1f", x, y)
	}
	b.WriteString(`"/>` + "\n")
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func fmtNum(v float64) string {
	switch {
	case v >= 100 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

func fmtDur(sec float64) string {
	switch {
	case sec >= 7200:
		return fmt.Sprintf("%.1fh", sec/3600)
	case sec >= 120:
		return fmt.Sprintf("%.0fm", sec/60)
	}
	return fmt.Sprintf("%.0fs", sec)
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
