package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/metrics"
)

// progress shows a crawl's state while it runs: a line redrawn in place on a
// terminal, or a log line every interval otherwise.
type progress struct {
	done chan struct{}
	wg   sync.WaitGroup
}

func startProgress(w io.Writer, every time.Duration, fr frontier.Frontier, tally *metrics.Tally, waiting func(time.Time) []fetch.HostWait) *progress {
	p := &progress{done: make(chan struct{})}
	tty := isTerminal(w)
	if tty {
		every = 500 * time.Millisecond
	}
	if every <= 0 {
		return p
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				if tty {
					fmt.Fprint(w, "\r\033[K")
				}
				return
			case <-t.C:
			}
			line := progressLine(fr, tally, waiting(time.Now()))
			if tty {
				fmt.Fprint(w, "\r\033[K"+line)
			} else {
				fmt.Fprintln(w, time.Now().Format("15:04:05"), line)
			}
		}
	}()
	return p
}

func (p *progress) stop() {
	close(p.done)
	p.wg.Wait()
}

func progressLine(fr frontier.Frontier, tally *metrics.Tally, waiting []fetch.HostWait) string {
	c, err := fr.Counts(context.Background())
	if err != nil {
		return "progress: " + err.Error()
	}
	s := tally.Snapshot(time.Now())
	rate := s.EffectiveRate()
	eta := "?"
	if todo := c.Queued + c.Leased; rate > 0 {
		eta = time.Duration(float64(todo) / rate * float64(time.Second)).Round(time.Second).String()
	} else if todo == 0 {
		eta = "0s"
	}
	line := fmt.Sprintf("done %d  abandoned %d  queued %d  parked %d  |  %.1f ok/s  429 %.1f%% (last min %.1f%%)  |  ETA %s",
		c.Done, c.Abandoned, c.Queued+c.Leased, c.Parked, rate, 100*s.Total.Ratio429(), 100*s.Rolling429, eta)
	if len(waiting) > 0 {
		hw := waiting[0]
		line += fmt.Sprintf("  |  parked: %s until %s", hw.Host, hw.Until.Format("15:04:05"))
		if hw.Why != "" {
			line += " (" + hw.Why + ")"
		}
		if n := len(waiting) - 1; n > 0 {
			line += fmt.Sprintf(" and %d more hosts", n)
		}
	}
	return line
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
