package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the summary for people: the totals, why URLs were
// abandoned, and one row per host and per exit.
func WriteTable(w io.Writer, s Summary) {
	fmt.Fprintf(w, "\nURLs %d: %d done, %d not found, %d abandoned, %d parked, %d queued\n", s.URLs, s.Done, s.NotFound, s.Abandoned, s.Parked, s.Queued)
	retries := fmt.Sprintf("%.2f retries per success", s.RetriesPerSuccess)
	if s.Fetched == 0 && s.Retries > 0 {
		retries = fmt.Sprintf("%d retries, no success", s.Retries) // (it read 0.00 retries per success)
	}
	aborted := ""
	if s.Aborted > 0 {
		aborted = fmt.Sprintf(" (%d cut short by the stop, unanswered)", s.Aborted)
	}
	fmt.Fprintf(w, "Requests %d%s in %.1fs: %.2f successes/s, 429 ratio %.2f%%%s, %s\n",
		s.Requests, aborted, s.ElapsedSeconds, s.EffectiveRate, 100*s.Ratio429, otherRefusals(s.ResponsesByStatus), retries)
	if s.Truncated > 0 {
		fmt.Fprintf(w, "Truncated %d: bodies cut at --max-body, each marked truncated in results.jsonl\n", s.Truncated)
	}
	fmt.Fprintf(w, "Throttled %.1fs (cooldowns and pauses the servers' pushback imposed, summed over lanes); work held back by the limiter %.1fs\n",
		s.ThrottledSeconds, s.HeldBackSeconds)
	if len(s.AbandonedByReason) > 0 {
		fmt.Fprintln(w, "Abandoned:")
		reasons := make([]string, 0, len(s.AbandonedByReason))
		for r := range s.AbandonedByReason {
			reasons = append(reasons, r)
		}
		sort.Slice(reasons, func(i, j int) bool { return s.AbandonedByReason[reasons[i]] > s.AbandonedByReason[reasons[j]] })
		for _, r := range reasons {
			fmt.Fprintf(w, "  %6d  %s\n", s.AbandonedByReason[r], r)
		}
	}
	table(w, "HOST", s.PerHost, 20)
	table(w, "EXIT", s.PerExit, 20)
	var failing []Scoped
	for _, x := range s.PerExit {
		if x.Failing != "" {
			failing = append(failing, x)
		}
	}
	if len(failing) > 0 {
		// Every one, beyond the table's 20 rows: a dead proxy costs
		// money and its row alone looks like a slow exit.
		fmt.Fprintf(w, "\n%d of %d exits failing as proxies at the end (check them with \"exitgate proxies check\"):\n", len(failing), len(s.PerExit))
		for _, x := range failing {
			fmt.Fprintf(w, "  %s: %s\n", x.Name, x.Failing)
		}
	}
}

func table(w io.Writer, title string, rows []Scoped, limit int) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\trequests\tok/s\t429%%\tthrottled s\tlearned/s\tabandoned\t\n", title)
	shown := rows
	if len(shown) > limit {
		// The busiest rows matter most.
		shown = append([]Scoped(nil), rows...)
		sort.Slice(shown, func(i, j int) bool { return shown[i].Requests > shown[j].Requests })
		shown = shown[:limit]
	}
	for _, r := range shown {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.1f\t%.2f\t%d\t\n", clip(r.Name, 40), r.Requests, r.EffectiveRate,
			100*r.Ratio429, r.ThrottledSeconds, r.PerSecond, r.Abandoned)
	}
	tw.Flush()
	if len(rows) > limit {
		fmt.Fprintf(w, "  ... and %d more in summary.json\n", len(rows)-limit)
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// otherRefusals names the refusals besides 429 that a server may push back
// with, when there were any: " (and 12 403s, 3 503s)". A limiter answering
// 403 (Apache's mod_evasive) read "429 ratio 0.00%" alone while it refused
// the crawl's fastest lane.
func otherRefusals(byStatus map[string]int64) string {
	var parts []string
	for _, code := range []string{"403", "503"} {
		if n := byStatus[code]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %ss", n, code))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (and " + strings.Join(parts, ", ") + ")"
}
