package dashboard

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/exitgate/exitgate/monitor"
)

// WriteTables prints s as the dashboard's tables, for a terminal: totals,
// hosts, exits (those with a reputation first), parked hosts, parked and
// abandoned URLs by reason, and the latest events and change records
// (at most rows of each of the last two).
func WriteTables(w io.Writer, s monitor.Status, rows int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	t := s.Totals
	if s.Ended.IsZero() {
		fmt.Fprintf(tw, "exitgate at %s, started %s (%s ago)\n", s.At.Format(time.RFC3339), s.Started.Format(time.RFC3339), s.At.Sub(s.Started).Round(time.Second))
	} else {
		// Its final counts, kept up by --linger: said as over, not live.
		fmt.Fprintf(tw, "exitgate crawl ended at %s, after %s (started %s): its final counts\n", s.Ended.Format(time.RFC3339), s.Ended.Sub(s.Started).Round(time.Second), s.Started.Format(time.RFC3339))
	}
	fmt.Fprintf(tw, "requests %d  ok %d  429s %d (%s; last window %s)  %.1f responses/s  in flight %d\n",
		t.Requests, t.OK, t.Throttled, pct(t.Ratio429), pct(t.Window429), t.Rate, t.InFlight)
	fmt.Fprintf(tw, "URLs %d  done %d  not found %d  queued %d  parked %d  abandoned %d\n", t.URLs, t.Done, t.NotFound, t.Queued, t.Parked, t.Abandoned)
	if s.Spike {
		for _, e := range s.Events {
			if e.Kind == monitor.KindSpike {
				fmt.Fprintf(tw, "SPIKE: %s\n", e.Message)
				break
			}
		}
	}

	fmt.Fprintf(tw, "\nHOSTS\nhost\tphase\tscope\trate/s\tcapacity/s\tlanes\t429 ratio\tbudget\tover budget\talert\tbreaker\twarnings\n")
	for _, h := range s.Hosts {
		alert := ""
		if h.Alert {
			alert = "ALERT"
		}
		br := h.Breaker
		if !h.BreakerUntil.IsZero() {
			br += " until " + h.BreakerUntil.Format(time.TimeOnly)
		}
		over := ""
		if h.OverBudgetSeconds > 0 {
			over = (time.Duration(h.OverBudgetSeconds) * time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.2f\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Host, h.Phase, h.Scope, h.Rate, h.Capacity, h.Lanes,
			pct(h.Ratio429), pct(h.Budget), over, alert, br, strings.Join(h.Warnings, "; "))
	}

	fmt.Fprintf(tw, "\nEXITS\nexit\trequests\tok\t429s\t429 ratio\treputation\ton hosts\n")
	for _, x := range s.Exits {
		var on []string
		for _, h := range x.Hosts {
			e := h.Host + ": " + h.Reputation
			if !h.Until.IsZero() {
				e += " until " + h.Until.Format(time.TimeOnly)
			}
			if h.Why != "" {
				e += " (" + h.Why + ")"
			}
			on = append(on, e)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\n", x.ID, x.Requests, x.OK, x.Throttled, pct(x.Ratio429), x.Reputation, strings.Join(on, "; "))
	}

	fmt.Fprintf(tw, "\nPARKED\nhost\tuntil\twhy\n")
	for _, p := range s.Parked {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Host, p.Until.Format(time.RFC3339), p.Why)
	}
	fmt.Fprintf(tw, "\nPARKED URLS BY REASON\treason\tcount\n")
	for _, k := range byCount(s.ParkedByReason) {
		fmt.Fprintf(tw, "\t%s\t%d\n", k, s.ParkedByReason[k])
	}
	fmt.Fprintf(tw, "\nABANDONED BY REASON\treason\tcount\n")
	for _, k := range byCount(s.AbandonedByReason) {
		fmt.Fprintf(tw, "\t%s\t%d\n", k, s.AbandonedByReason[k])
	}

	fmt.Fprintf(tw, "\nEVENTS (newest first)\ntime\tlevel\tkind\thost\texit\tmessage\n")
	for _, e := range s.Events[:min(len(s.Events), rows)] {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.At.Format(time.TimeOnly), e.Level, e.Kind, e.Host, e.Exit, e.Message)
	}
	fmt.Fprintf(tw, "\nLEARNER'S CHANGES (newest first)\ntime\thost\tlane\trule\twhat\tfrom\tto\twhy\n")
	for _, c := range s.Changes[:min(len(s.Changes), rows)] {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%g\t%g\t%s\n", c.At.Format(time.TimeOnly), c.Host, c.Lane, c.Rule, c.What, c.From, c.To, c.Why)
	}
	return tw.Flush()
}

func pct(x float64) string { return fmt.Sprintf("%.2f%%", 100*x) }

// byCount returns m's keys, largest count first.
func byCount(m map[string]int64) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			if m[a] > m[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return keys
}
