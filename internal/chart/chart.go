// Package chart holds the few pieces of plain SVG (standard library only)
// that the bench charts share: a palette, round axis ticks, a framed panel
// with a grid, polylines, and number and duration labels. It is pure and
// safe for concurrent use.
package chart

import (
	"fmt"
	"math"
	"strings"
)

// Palette gives each series a distinct colour, in order.
var Palette = []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#17becf", "#bcbd22"}

// Tick is one axis label at a position in SVG coordinates.
type Tick struct {
	Pos   float64
	Label string
}

// Style is how a polyline is drawn. Zero Width means 1.6; zero Opacity
// means opaque; empty Dash means solid; empty Marker means no markers.
type Style struct {
	Color   string
	Width   float64
	Dash    string
	Opacity float64
	// Marker is a shape ("circle", "square", "triangle", "diamond",
	// "cross", "plus") drawn on every MarkEvery-th point from MarkOffset,
	// so that a line hidden under another still shows.
	Marker     string
	MarkEvery  int
	MarkOffset int
}

// dashes and markers tell series apart where colours do not suffice:
// where two lines coincide, and in print.
var (
	dashes  = []string{"", "9 4", "3 3", "12 3 3 3", "6 6", "2 5", "14 5", "5 2 1 2"}
	markers = []string{"circle", "square", "triangle", "diamond", "cross", "plus"}
)

// SeriesStyle is the style of series i of n on one chart: its palette
// colour; a width from 5 (the first) down to 1.2 (the last), so that lines
// drawn in order each stay visible as a border around the thinner ones
// drawn over them; its own dash pattern; and its own marker shape, placed on
// points no other series of the chart marks, so that two series that
// coincide exactly still show both.
func SeriesStyle(i, n int) Style {
	w := 5.0
	if n > 1 {
		w = 5 - 3.8*float64(i)/float64(n-1)
	}
	every := max(8, 2*n)
	return Style{
		Color: Palette[i%len(Palette)], Width: w, Opacity: 0.9,
		Dash:   dashes[i%len(dashes)],
		Marker: markers[i%len(markers)], MarkEvery: every, MarkOffset: (2 * i) % every,
	}
}

// Axes draws the frame of a panel at (left, top) of w×h, a grid line and a
// label at each y tick, a label under each x tick, and label rotated along
// the left edge.
func Axes(b *strings.Builder, left, top, w, h int, xTicks, yTicks []Tick, label string) {
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", left, top, w, h)
	for _, t := range yTicks {
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", left+1, t.Pos, left+w-1, t.Pos)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" fill="#333">%s</text>`+"\n", left-6, t.Pos+4, Esc(t.Label))
	}
	for _, t := range xTicks {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#333">%s</text>`+"\n", t.Pos, top+h+16, Esc(t.Label))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" transform="rotate(-90 %d %d)" text-anchor="middle" fill="#333">%s</text>`+"\n", 16, top+h/2, 16, top+h/2, Esc(label))
}

// Line draws pts (SVG coordinates) as one polyline.
func Line(b *strings.Builder, pts [][2]float64, s Style) {
	if len(pts) == 0 {
		return
	}
	if s.Width == 0 {
		s.Width = 1.6
	}
	fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="%.1f" stroke-linejoin="round"`, s.Color, s.Width)
	if s.Dash != "" {
		fmt.Fprintf(b, ` stroke-dasharray="%s"`, s.Dash)
	}
	if s.Opacity > 0 && s.Opacity < 1 {
		fmt.Fprintf(b, ` stroke-opacity="%.2f"`, s.Opacity)
	}
	b.WriteString(` points="`)
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(b, "%.1f,%.1f", p[0], p[1])
	}
	b.WriteString(`"/>` + "\n")
	if s.Marker != "" && s.MarkEvery > 0 {
		for i := s.MarkOffset; i < len(pts); i += s.MarkEvery {
			Marker(b, pts[i][0], pts[i][1], s)
		}
	}
}

// Marker draws s's marker shape centred at (x, y).
func Marker(b *strings.Builder, x, y float64, s Style) {
	const r = 3.5
	attrs := fmt.Sprintf(`fill="%s" stroke="white" stroke-width="0.8"`, s.Color)
	switch s.Marker {
	case "circle":
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f" %s/>`+"\n", x, y, r, attrs)
	case "square":
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" %s/>`+"\n", x-r, y-r, 2*r, 2*r, attrs)
	case "triangle":
		fmt.Fprintf(b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" %s/>`+"\n", x, y-r-1, x-r-0.5, y+r, x+r+0.5, y+r, attrs)
	case "diamond":
		fmt.Fprintf(b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" %s/>`+"\n", x, y-r-1, x+r+1, y, x, y+r+1, x-r-1, y, attrs)
	case "cross", "plus":
		d := r
		if s.Marker == "cross" {
			fmt.Fprintf(b, `<path d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f" stroke="%s" stroke-width="2"/>`+"\n", x-d, y-d, x+d, y+d, x-d, y+d, x+d, y-d, s.Color)
		} else {
			fmt.Fprintf(b, `<path d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f" stroke="%s" stroke-width="2"/>`+"\n", x-d-1, y, x+d+1, y, x, y-d-1, x, y+d+1, s.Color)
		}
	}
}

// LegendKey draws a 28-wide sample of s (its line, dash and marker) with
// its left end at (x, y).
func LegendKey(b *strings.Builder, x, y float64, s Style) {
	w := s.Width
	if w == 0 {
		w = 1.6
	}
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"`, x, y, x+28, y, s.Color, min(w, 3.5))
	if s.Dash != "" {
		fmt.Fprintf(b, ` stroke-dasharray="%s"`, s.Dash)
	}
	b.WriteString("/>\n")
	if s.Marker != "" {
		Marker(b, x+14, y, s)
	}
}

// Break draws the mark of an axis cut at (x, y): two short parallel
// slashes across the axis with a gap between them, on a vertical axis
// (the y axis stops short of the data) or a horizontal one (the x axis).
func Break(b *strings.Builder, x, y float64, vertical bool) {
	const d, gap = 6.0, 3.0
	if vertical {
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="white"/>`+"\n", x-d, y-gap/2, 2*d, gap)
		for _, dy := range []float64{-gap / 2, gap / 2} {
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333" stroke-width="1.2"/>`+"\n", x-d, y+dy+2, x+d, y+dy-2)
		}
		return
	}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="white"/>`+"\n", x-gap/2, y-d, gap, 2*d)
	for _, dx := range []float64{-gap / 2, gap / 2} {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333" stroke-width="1.2"/>`+"\n", x+dx-2, y+d, x+dx+2, y-d)
	}
}

// NiceCeil rounds v up to 1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of
// ten.
func NiceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	return roundUp(v, []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8})
}

// roundUp rounds v > 0 up to one of the mantissas times a power of ten.
func roundUp(v float64, mantissas []float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range mantissas {
		if m*p >= v*(1-1e-12) {
			return m * p
		}
	}
	return 10 * p
}

// NiceStep returns the smallest round step (1, 2, 2.5 or 5 times a power of
// ten) that divides [0, max] into at most n intervals.
func NiceStep(max float64, n int) float64 {
	if max <= 0 || n <= 0 {
		return 1
	}
	return roundUp(max/float64(n), []float64{1, 2, 2.5, 5})
}

// TimeStep returns the smallest round step of time, in seconds (1, 2, 5,
// 10, 15, 20 or 30 seconds or minutes, or 1, 2, 3, 6 or 12 hours or whole
// days), that divides [0, max] seconds into at most n intervals.
func TimeStep(max float64, n int) float64 {
	if max <= 0 || n <= 0 {
		return 1
	}
	raw := max / float64(n)
	for _, unit := range []float64{1, 60} {
		for _, m := range []float64{1, 2, 5, 10, 15, 20, 30} {
			if m*unit >= raw {
				return m * unit
			}
		}
	}
	for _, h := range []float64{1, 2, 3, 6, 12} {
		if h*3600 >= raw {
			return h * 3600
		}
	}
	return math.Ceil(raw/86400) * 86400
}

// TimeLabel returns the labeller of a time axis whose ticks are step
// seconds apart: every label in the one unit that step is a whole number
// of (hours, minutes or seconds), so the ticks read 0, 20s, 40s, ... 120s or
// 0, 2m, 4m, ..., never a mix, never rounded.
func TimeLabel(step float64) func(float64) string {
	unit, name := 1.0, "s"
	switch {
	case step >= 3600 && math.Mod(step, 3600) == 0:
		unit, name = 3600, "h"
	case step >= 60 && math.Mod(step, 60) == 0:
		unit, name = 60, "m"
	}
	return func(v float64) string {
		if v == 0 {
			return "0"
		}
		return Num(v/unit) + name
	}
}

// TimeTicks returns round ticks for a time axis of max seconds placed by
// pos: at most n intervals of a TimeStep, labelled by TimeLabel.
func TimeTicks(max float64, n int, pos func(float64) float64) []Tick {
	step := TimeStep(max, n)
	return Ticks(max, step, pos, TimeLabel(step))
}

// Ticks returns 0, step, 2*step, ... up to max, placed by pos and labelled
// by label.
func Ticks(max, step float64, pos func(float64) float64, label func(float64) string) []Tick {
	var out []Tick
	for i := 0; ; i++ {
		v := float64(i) * step
		if v > max*(1+1e-9) {
			return out
		}
		out = append(out, Tick{Pos: pos(v), Label: label(v)})
	}
}

// Num formats an axis value: whole numbers plainly, others to 2-3
// significant digits.
func Num(v float64) string {
	switch {
	case v >= 100 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// Dur formats seconds, rounded to the second, exactly and briefly: "0",
// "45s", "1m30s", "2m", "1h5m", "2h", "1d6h". Tick labels from TimeStep
// steps are all round in it.
func Dur(sec float64) string {
	n := int64(math.Round(sec))
	if n <= 0 {
		return "0"
	}
	var b strings.Builder
	for _, u := range []struct {
		name string
		secs int64
	}{{"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}} {
		if q := n / u.secs; q > 0 {
			fmt.Fprintf(&b, "%d%s", q, u.name)
			n -= q * u.secs
		}
	}
	return b.String()
}

// Trim cuts s to n characters with an ellipsis.
func Trim(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Esc escapes s for SVG text and attributes.
func Esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// LogTicks returns ticks at 0, 1, 10, 100, ... up to 10^(decades-1), for
// a log10(1+v) scale, placed by pos.
func LogTicks(decades int, pos func(float64) float64) []Tick {
	var out []Tick
	for i := range decades + 1 {
		v := 0.0
		if i > 0 {
			v = math.Pow(10, float64(i-1))
		}
		out = append(out, Tick{Pos: pos(v), Label: Num(v)})
	}
	return out
}

// Reference draws a dashed horizontal line across a panel at y, labelled
// at its right end.
func Reference(b *strings.Builder, left, w int, y float64, color, label string) {
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-dasharray="6 4"/>`+"\n", left, y, left+w, y, color)
	fmt.Fprintf(b, `<text x="%d" y="%.1f" fill="%s" text-anchor="end">%s</text>`+"\n", left+w-4, y-4, color, Esc(label))
}

// Project maps (x, y) data points to SVG coordinates.
func Project(pts [][2]float64, x, y func(float64) float64) [][2]float64 {
	out := make([][2]float64, len(pts))
	for i, p := range pts {
		out[i] = [2]float64{x(p[0]), y(p[1])}
	}
	return out
}
