package peerbench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/exitgate/exitgate/sim/strategy"
)

// Report is everything one bench measured, as written to JSON: how it was
// run, what each target and strategy is, and every run's results with its
// server-side timeline.
type Report struct {
	// Command is the command line that produced the report.
	Command         string    `json:"command"`
	Started         time.Time `json:"started"`
	Exits           int       `json:"exits"`
	DurationSeconds float64   `json:"duration_seconds"`
	Parallel        int       `json:"parallel"`
	// Workers is how many `exitgate crawl --redis` processes shared each
	// run (MatrixConfig.Workers); 0 or 1: one crawl process.
	Workers    int            `json:"workers"`
	Mode       string         `json:"mode"`
	Targets    []Target       `json:"targets"`
	Strategies []StrategyInfo `json:"strategies"`
	Results    []Result       `json:"results"`
}

// StrategyInfo describes one strategy.
type StrategyInfo struct {
	Name    string `json:"name"`
	Summary string `json:"summary"`
	Source  string `json:"source"`
}

// Infos describes specs for the report.
func Infos(specs []strategy.Spec) []StrategyInfo {
	out := make([]StrategyInfo, len(specs))
	for i, s := range specs {
		out[i] = StrategyInfo{Name: s.Name, Summary: s.Summary, Source: s.Source}
	}
	return out
}

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// ResultsFor returns the results of one target, in run order; runs that
// never started are left out.
func (r Report) ResultsFor(target string) []Result {
	var out []Result
	for _, x := range r.Results {
		if x.Target == target {
			out = append(out, x)
		}
	}
	return out
}

// Markdown writes an overview (every target × strategy: utilization after
// the first 60 s and the 429 ratio), then one table per target: each
// strategy's figures from the server's log (sim/measure), and notes on runs
// whose client and server counts disagree, that ran dry or that failed.
func Markdown(w io.Writer, r Report) error {
	var b strings.Builder
	workers := ""
	if r.Workers > 1 {
		workers = fmt.Sprintf(", %d workers per run sharing one crawl through the run's own redis-server", r.Workers)
	}
	fmt.Fprintf(&b, "Command: `%s`\n\n%d exits, %s per run, %s%s; figures from each server's own access log (sim/measure).\n\n",
		r.Command, r.Exits, time.Duration(r.DurationSeconds*float64(time.Second)), r.Mode, workers)
	overview(&b, r)
	for _, t := range r.Targets {
		rs := r.ResultsFor(t.Name)
		if len(rs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "### %s\n\n%s. Allowed: %s/s per exit, %s/s for %d exits.\n\n",
			t.Name, t.Describe(), fmtRate(t.Rate), fmtRate(t.Rate*float64(r.Exits)), r.Exits)
		b.WriteString("| strategy | utilization | after 30 s | after 60 s | 429 ratio | 429s while learning | time to settle | requests | client = server |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|:---:|\n")
		var notes []string
		for _, x := range rs {
			if x.Error != "" {
				fmt.Fprintf(&b, "| %s | failed | | | | | | | |\n", x.Strategy)
				notes = append(notes, fmt.Sprintf("%s failed: %s", x.Strategy, firstLine(x.Error)))
				continue
			}
			f := x.Server
			settle := "never"
			if f.SettleSeconds >= 0 {
				settle = fmt.Sprintf("%.0f s", f.SettleSeconds)
			}
			agree := "yes"
			if !x.Agree {
				agree = "**no**"
				notes = append(notes, fmt.Sprintf("%s: client and server disagree: %s", x.Strategy, strings.Join(x.Mismatches, "; ")))
			}
			if x.DuplicateURLs > 0 {
				notes = append(notes, fmt.Sprintf("%s: **%d URLs finished twice** (result lines of a URL already in a results.jsonl of the run)", x.Strategy, x.DuplicateURLs))
			}
			if x.RanDry {
				notes = append(notes, fmt.Sprintf("%s ran out of URLs before the end", x.Strategy))
			}
			fmt.Fprintf(&b, "| %s | %.1f%% | %s | %s | %.2f%% | %d | %s | %d | %s |\n",
				x.Strategy, 100*f.Utilization, after(f.UtilizationAfter30, f.Seconds, 30), after(f.UtilizationAfter60, f.Seconds, 60),
				100*f.Ratio429, f.LearningLimited, settle, f.Requests, agree)
		}
		for _, n := range notes {
			fmt.Fprintf(&b, "\n- %s", n)
		}
		b.WriteString("\n\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// overview writes the targets × strategies table: utilization after 60 s
// (whole run for shorter runs) and the 429 ratio of the whole run.
func overview(b *strings.Builder, r Report) {
	var strategies []string
	seen := map[string]bool{}
	for _, x := range r.Results {
		if !seen[x.Strategy] {
			seen[x.Strategy] = true
			strategies = append(strategies, x.Strategy)
		}
	}
	if len(r.Targets) < 2 && len(strategies) < 2 {
		return
	}
	what := "utilization after 60 s"
	if r.DurationSeconds <= 60 {
		what = "utilization"
	}
	fmt.Fprintf(b, "%s / 429 ratio, from each server's log:\n\n| target |", what)
	for _, s := range strategies {
		fmt.Fprintf(b, " %s |", s)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(strategies)) + "\n")
	for _, t := range r.Targets {
		rs := r.ResultsFor(t.Name)
		if len(rs) == 0 {
			continue
		}
		fmt.Fprintf(b, "| %s |", t.Name)
		for _, s := range strategies {
			cell := ""
			for _, x := range rs {
				switch {
				case x.Strategy != s:
				case x.Error != "":
					cell = "failed"
				case r.DurationSeconds <= 60:
					cell = fmt.Sprintf("%.0f%% / %.1f%%", 100*x.Server.Utilization, 100*x.Server.Ratio429)
				default:
					cell = fmt.Sprintf("%.0f%% / %.1f%%", 100*x.Server.UtilizationAfter60, 100*x.Server.Ratio429)
				}
			}
			fmt.Fprintf(b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// after formats a utilization that leaves out the first skip seconds: "–"
// when the run was not longer.
func after(u, seconds, skip float64) string {
	if seconds <= skip {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*u)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Summary is the run's headline in one line.
func (r Result) Summary() string {
	check := "client = server"
	if !r.Agree {
		check = fmt.Sprintf("client ≠ server (%d mismatches)", len(r.Mismatches))
	}
	s := fmt.Sprintf("utilization %.1f%% (after 30 s %s, after 60 s %s), 429s %.2f%% of %d requests, %s",
		100*r.Server.Utilization, after(r.Server.UtilizationAfter30, r.Server.Seconds, 30), after(r.Server.UtilizationAfter60, r.Server.Seconds, 60),
		100*r.Server.Ratio429, r.Server.Requests, check)
	if r.Workers > 1 {
		s += fmt.Sprintf(", %d workers (rows finished: %s)", r.Workers, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(r.WorkerRows)), "/"), "[]"))
	}
	if r.DuplicateURLs > 0 {
		s += fmt.Sprintf(", %d URLs finished twice", r.DuplicateURLs)
	}
	return s
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}
