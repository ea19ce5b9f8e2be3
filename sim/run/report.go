package run

import (
	"fmt"
	"io"
	"strings"

	"github.com/exitgate/exitgate/sim/server"
	"github.com/exitgate/exitgate/sim/strategy"
)

// Markdown writes one table per scenario: every strategy's figures, the
// steady-state ones (after the first window) next to the whole-run ones.
func Markdown(w io.Writer, rs []ScenarioResult) error {
	var b strings.Builder
	for _, s := range rs {
		fmt.Fprintf(&b, "### %s (%s, headers: %s, %d URLs)\n\n%s\n\n", s.Name, s.Kind, s.Headers, s.URLs, s.Description)
		b.WriteString("| strategy | utilization | after warmup | 429 ratio | after warmup | learning 429s | settle s | bans | retries/success | seconds to finish | done | abandoned |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range s.Results {
			fin := fmt.Sprintf("%.0f", r.SecondsToFinish)
			if !r.Finished {
				fin = ">" + fin
			}
			su, sr := "–", "–" // the run ended within the warmup
			if r.RequestsSteady > 0 {
				su, sr = fmt.Sprintf("%.1f%%", 100*r.UtilizationSteady), fmt.Sprintf("%.2f%%", 100*r.Ratio429Steady)
			}
			fmt.Fprintf(&b, "| %s | %.1f%% | %s | %.2f%% | %s | %d | %s | %d | %.2f | %s | %d | %d |\n",
				r.Strategy, 100*r.Utilization, su, 100*r.Ratio429, sr,
				r.Learning429s, Settle(r.SettleSeconds), r.Bans, r.RetriesPerSuccess, fin, r.Done, r.Abandoned)
		}
		b.WriteString("\n")
	}
	if f := Check(rs); len(f) > 0 {
		b.WriteString("### Targets\n\n")
		for _, x := range f {
			mark := "PASS"
			switch {
			case strings.HasPrefix(x.Detail, "not evaluated"):
				mark = "N/A"
			case !x.OK:
				mark = "MISS"
			}
			fmt.Fprintf(&b, "- %s %s: %s\n", mark, x.Scenario, x.Detail)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Settle renders a time to settle: whole seconds, or "never".
func Settle(s float64) string {
	if s < 0 {
		return "never"
	}
	return fmt.Sprintf("%.0f", s)
}

// Finding is one target checked on one scenario.
type Finding struct {
	Scenario string
	OK       bool
	Detail   string
}

// Target floors, from the simulator issue.
const (
	TargetUtilization        = 0.95  // per-IP, after the first window
	Target429                = 0.01  // per-IP, host-scoped, per-credential
	TargetUtilizationHeaders = 0.98  // per-IP with declared quotas
	Target429Headers         = 0.005 // per-IP with declared quotas
)

// Check evaluates the targets for exitgate on every scenario where
// exitgate ran: on per-IP scenarios, utilization and 429 ratio after the
// first window (stricter when the site declares its quota in headers) and
// no baseline with higher utilization at an equal or lower 429 ratio (whole
// run); on host-scoped and per-credential scenarios, 429 ratio after the
// first window.
func Check(rs []ScenarioResult) []Finding {
	var out []Finding
	for _, s := range rs {
		eg, ok := find(s.Results, strategy.Exitgate)
		if !ok {
			continue
		}
		if eg.RequestsSteady == 0 {
			out = append(out, Finding{s.Name, false, "not evaluated: exitgate's run ended within the first window"})
			continue
		}
		switch s.Kind {
		case server.PerIP:
			u, q := TargetUtilization, Target429
			if h := s.Headers; strings.HasPrefix(h, server.HeadersXRateLimit.String()) || strings.HasPrefix(h, server.HeadersIETF.String()) {
				u, q = TargetUtilizationHeaders, Target429Headers
			}
			out = append(out, Finding{s.Name, eg.UtilizationSteady >= u && eg.Ratio429Steady <= q,
				fmt.Sprintf("exitgate %.1f%% utilization (target >= %.0f%%), %.2f%% 429s (target <= %.1f%%) after the first window",
					100*eg.UtilizationSteady, 100*u, 100*eg.Ratio429Steady, 100*q)})
			for _, r := range s.Results {
				if !strategy.Baseline(r.Strategy) {
					continue
				}
				if r.Utilization > eg.Utilization && r.Ratio429 <= eg.Ratio429 {
					out = append(out, Finding{s.Name, false, fmt.Sprintf("%s beats exitgate: %.1f%% utilization at %.2f%% 429s vs %.1f%% at %.2f%%",
						r.Strategy, 100*r.Utilization, 100*r.Ratio429, 100*eg.Utilization, 100*eg.Ratio429)})
				}
			}
		case server.HostScoped, server.PerCredential:
			out = append(out, Finding{s.Name, eg.Ratio429Steady <= Target429,
				fmt.Sprintf("exitgate %.2f%% 429s after the first window (target <= %.0f%%), %.1f%% utilization",
					100*eg.Ratio429Steady, 100*Target429, 100*eg.UtilizationSteady)})
		}
	}
	return out
}

func find(rs []Result, name string) (Result, bool) {
	for _, r := range rs {
		if r.Strategy == name {
			return r, true
		}
	}
	return Result{}, false
}

// Report is the bench's JSON document.
type Report struct {
	Scenarios []ScenarioResult `json:"scenarios"`
}
