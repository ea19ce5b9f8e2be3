package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/cupwriter"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/report"
)

// etaWindow is how far back the rate behind the ETA looks: long enough to
// smooth pacing and retries, short enough that a crawl whose lanes spent
// their first minutes learning is not judged by them.
const etaWindow = time.Minute

// rateWindow estimates the recent rate at which URLs finish from readings of
// the finished count, and the time left from it. Its methods take the
// instant, so the estimate is tested at explicit instants. It is not safe
// for concurrent use.
type rateWindow struct {
	span    time.Duration
	samples []rateSample // oldest first; at most one older than span
}

type rateSample struct {
	at time.Time
	n  int
}

// add records that n URLs had finished at at.
func (w *rateWindow) add(at time.Time, n int) {
	w.samples = append(w.samples, rateSample{at, n})
	// Keep one reading at or before the window's start, so the window
	// spans all of span once there is that much history.
	cut := 0
	for cut+1 < len(w.samples) && !w.samples[cut+1].at.After(at.Add(-w.span)) {
		cut++
	}
	w.samples = w.samples[cut:]
}

// rate returns URLs finished per second over the window up to the last
// reading; ok is false until the readings span a second or more.
func (w *rateWindow) rate() (perSec float64, ok bool) {
	if len(w.samples) < 2 {
		return 0, false
	}
	first, last := w.samples[0], w.samples[len(w.samples)-1]
	d := last.at.Sub(first.at)
	if d < time.Second {
		return 0, false
	}
	return float64(last.n-first.n) / d.Seconds(), true
}

// eta returns the time left to finish left URLs at the recent rate; ok is
// false when it cannot tell (too little history, or nothing finished within
// the window).
func (w *rateWindow) eta(left int) (time.Duration, bool) {
	if left <= 0 {
		return 0, true
	}
	r, ok := w.rate()
	if !ok || r <= 0 {
		return 0, false
	}
	return time.Duration(float64(left) / r * float64(time.Second)), true
}

// fmtETA prints an ETA rounded to what matters: seconds below ten minutes,
// minutes above; "?" when unknown.
func fmtETA(d time.Duration, ok bool) string {
	switch {
	case !ok:
		return "?"
	case d >= 10*time.Minute:
		return shortDuration(d.Round(time.Minute))
	}
	return d.Round(time.Second).String()
}

// progress shows a crawl's state while it runs: on a terminal, a bar
// (github.com/vbauerster/mpb) with the share finished, elapsed time and an
// ETA from the recent rate, log lines printed above it; otherwise a log line
// every interval.
type progress struct {
	w       io.Writer
	every   time.Duration
	fr      frontier.Frontier
	tally   *metrics.Tally
	waiting func(time.Time) []fetch.HostWait
	start   time.Time
	eta     rateWindow

	logs *switchWriter // where the crawl's log goes: above the bar on a terminal

	bars   *mpb.Progress // nil unless on a terminal
	bar    *mpb.Bar
	status atomic.Value // reading: the last, shown after the bar

	done chan struct{}
	wg   sync.WaitGroup
}

// startProgress starts showing progress on w. logs carries the crawl's log
// and messages; on a terminal they are printed above the bar while it runs.
// every <= 0 turns the log lines off (the bar is still shown on a terminal).
func startProgress(w io.Writer, logs *switchWriter, every time.Duration, fr frontier.Frontier, tally *metrics.Tally, waiting func(time.Time) []fetch.HostWait) *progress {
	p := &progress{w: w, logs: logs, every: every, fr: fr, tally: tally, waiting: waiting,
		start: time.Now(), eta: rateWindow{span: etaWindow}, done: make(chan struct{})}
	p.status.Store(reading{eta: "?"})
	// Without a bar, the frontier is read (and the ETA sampled) only for a
	// line: counting a frontier of millions of jobs is not free.
	tick := every
	// A first reading: the ETA's first sample, and the bar's totals from
	// its first draw (not 0/0).
	r, ok := p.read(time.Now())
	if barTerminal(w) {
		p.startBar()
		if ok {
			p.showBar(r)
		}
		tick = 500 * time.Millisecond
	}
	if tick <= 0 {
		return p
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case now := <-t.C:
				r, ok := p.read(now)
				if !ok {
					continue
				}
				if p.bars != nil {
					p.showBar(r)
				} else {
					fmt.Fprintln(p.w, now.Format("15:04:05"), p.line(r))
				}
			}
		}
	}()
	return p
}

// reading is one look at the crawl.
type reading struct {
	at      time.Time
	c       frontier.Counts
	s       metrics.Snapshot
	waiting []fetch.HostWait
	eta     string
}

func (p *progress) read(now time.Time) (reading, bool) {
	c, err := p.fr.Counts(context.Background())
	if err != nil {
		fmt.Fprintln(p.logs, "progress:", err)
		return reading{}, false
	}
	p.eta.add(now, c.Done+c.Abandoned)
	r := reading{at: now, c: c, s: p.tally.Snapshot(now), waiting: p.waiting(now)}
	r.eta = etaText(c, r.waiting, fmtETA(p.eta.eta(c.Queued+c.Leased)))
	return r, true
}

// etaText is the ETA shown: eta, or "parked" when all that is left waits
// beyond --max-wait, parked or held by this worker to be parked (held for
// a host that must wait, it read "ETA 1s", then "ETA ?", for five minutes).
func etaText(c frontier.Counts, waiting []fetch.HostWait, eta string) string {
	held := 0
	for _, w := range waiting {
		held += w.Held
	}
	if left := c.Queued + c.Leased; left <= held && c.Parked+held > 0 {
		return "parked"
	}
	return eta
}

// line is the progress log line of r.
func (p *progress) line(r reading) string {
	total, fin := r.c.Total(), r.c.Done+r.c.Abandoned
	return fmt.Sprintf("finished %d/%d (%d%%)  %s  |  elapsed %s  ETA %s",
		fin, total, percent(fin, total), statusText(r), r.at.Sub(p.start).Round(time.Second), r.eta)
}

func percent(n, total int) int {
	if total <= 0 {
		return 100
	}
	return n * 100 / total
}

// clockOrDate writes t as a time of day when it falls within twelve hours
// of now on the same day, else with its date: a park until tomorrow read as
// a time already past ("until 04:38:07" at 04:38:12).
func clockOrDate(t, now time.Time) string {
	if d := t.Sub(now); d > -12*time.Hour && d < 12*time.Hour && t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}

// statusText is what a reading says besides the share finished: the
// frontier's other states, rates and 429 ratios, and which host is parked.
func statusText(r reading) string {
	counts, rates, parked := statusParts(r)
	return counts + "  |  " + rates + parked
}

// barText is statusText for the bar: the rates first, which a narrow
// terminal keeps when it cuts the line (at 80 columns the 429 figures
// were cut off, the counts before them kept).
func barText(r reading) string {
	counts, rates, parked := statusParts(r)
	return rates + "  |  " + counts + parked
}

// statusParts are the URL counts, the rates and the first parked host (""
// when none) of a progress line.
func statusParts(r reading) (counts, rates, parked string) {
	c, s := r.c, r.s
	// As the summary counts them: a 404 or 410 is not found, not abandoned.
	nf := report.CountNotFound(c.AbandonedByReason)
	counts = fmt.Sprintf("abandoned %d  queued %d  parked %d", c.Abandoned-nf, c.Queued+c.Leased, c.Parked)
	if nf > 0 {
		counts = fmt.Sprintf("not found %d  ", nf) + counts
	}
	rates = fmt.Sprintf("%.1f ok/s  429 %.1f%% (last min %.1f%%)", s.EffectiveRate(), 100*s.Total.Ratio429(), 100*s.Rolling429)
	if len(r.waiting) > 0 {
		hw := r.waiting[0]
		parked = fmt.Sprintf("  |  parked: %s until %s", hw.Host, clockOrDate(hw.Until, r.s.At))
		if hw.Why != "" {
			parked += " (" + hw.Why + ")"
		}
		if n := len(r.waiting) - 1; n > 0 {
			parked += fmt.Sprintf(" and %d more hosts", n)
		}
	}
	return counts, rates, parked
}

// startBar starts the bar on p.w and sends the log above it.
func (p *progress) startBar() {
	p.bars = mpb.New(mpb.WithOutput(p.w), mpb.WithRefreshRate(250*time.Millisecond), mpb.WithWidth(40))
	p.bar = p.bars.AddBar(0,
		mpb.PrependDecorators(
			decor.Any(func(s decor.Statistics) string { return fmt.Sprintf("finished %d/%d", s.Current, s.Total) }),
			decor.NewPercentage(" %d", decor.WC{W: 6}),
		),
		mpb.AppendDecorators(
			decor.Any(func(decor.Statistics) string { return " elapsed " + time.Since(p.start).Round(time.Second).String() }),
			decor.Any(func(decor.Statistics) string { return "  ETA " + p.status.Load().(reading).eta }),
			decor.Any(func(decor.Statistics) string { return "  " + barText(p.status.Load().(reading)) }),
		),
	)
	p.logs.set(p.bars)
}

func (p *progress) showBar(r reading) {
	p.status.Store(r)
	p.bar.SetTotal(int64(r.c.Total()), false)
	p.bar.SetCurrent(int64(r.c.Done + r.c.Abandoned))
}

// stop ends the display: the bar stays on screen at its last state, and the
// log goes straight to the terminal again.
func (p *progress) stop() {
	close(p.done)
	p.wg.Wait()
	if p.bars == nil {
		return
	}
	r, ok := p.read(time.Now())
	if ok {
		p.showBar(r)
	}
	if ok && r.c.Unfinished() == 0 {
		p.bar.SetTotal(int64(r.c.Total()), true) // complete
	} else {
		p.bar.Abort(false) // keep the bar where it stopped
	}
	p.logs.set(p.w)
	p.bars.Wait()
}

// switchWriter is a writer whose destination can change while it is in
// use: the crawl's log goes above the progress bar while one is shown. It is
// safe for concurrent use.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func newSwitchWriter(w io.Writer) *switchWriter { return &switchWriter{w: w} }

func (s *switchWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w = w
}

// barTerminal reports whether w is a terminal a bar can be drawn on: one
// whose width is known (a pseudo-terminal nobody sized reports 0 columns,
// and mpb would draw nothing on it; it gets the log lines instead).
func barTerminal(w io.Writer) bool {
	cw := cupwriter.New(w, false)
	if !cw.IsTerminal() {
		return false
	}
	width, _, err := cw.GetTermSize()
	return err == nil && width > 0
}
