package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/internal/rawhead"

	"github.com/spf13/cobra"

	"github.com/exitgate/exitgate/rlheader"
	"github.com/exitgate/exitgate/verdict"
)

// headMaxBytes bounds what `exitgate headers` reads: a head plus enough of
// the body to sniff for block pages.
const headMaxBytes = 4 << 20

type headersFlags struct {
	json          bool
	now           string
	profile       string
	maxRetryAfter time.Duration
	rules         []string
}

func newHeadersCmd() *cobra.Command {
	var f headersFlags
	cmd := &cobra.Command{
		Use:   "headers [FILE]",
		Short: "Explain what a response head says about rate limits",
		Long: `headers reads one raw HTTP response head, as "curl -sD - URL" prints it, from
FILE or standard input, and explains what exitgate understands of it: the
verdict, how long to wait, the limit, what remains, the window, the reset, the
declared policies and where each number came from, and what was ignored and
why.

The input is a status line ("HTTP/1.1 429 Too Many Requests"), optional when
only headers are given, then header lines; CRLF or LF; folded continuation
lines are joined. A body after the blank line is used only to recognise block
pages. When several heads follow each other (curl -L, 100 Continue) the last
one is explained. Malformed lines are reported by line number and skipped.

The command fails only when no status line and no header could be read.`,
		Example: `  curl -sD - -o /dev/null https://api.github.com/rate_limit | exitgate headers
  exitgate headers --json --now 2026-03-26T16:00:00Z examples/heads/429-github.txt
  exitgate headers --profile delta-millis --rule 403=throttled head.txt`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runHeaders(cmd, args, f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.json, "json", false, "print one JSON object instead of the plain explanation (times in seconds, null where unknown)")
	fl.StringVar(&f.now, "now", "", "when the response was received, RFC 3339")
	setDefaultText(fl, "now", "the head's Date, else the current time")
	fl.StringVar(&f.profile, "profile", "auto", "how bare reset numbers are read: auto (by magnitude), epoch-seconds, epoch-millis, delta-seconds or delta-millis")
	fl.DurationVar(&f.maxRetryAfter, "max-retry-after", rlheader.DefaultMaxRetryAfter, "flag Retry-After waits longer than this as excessive (a crawl honours up to a day, and parks a URL whose wait passes its --max-wait, 5m by default); 0 disables the flag")
	fl.StringArrayVar(&f.rules, "rule", nil, "override the verdict for a status, STATUS=VERDICT (e.g. 403=throttled); repeatable")
	return cmd
}

func runHeaders(cmd *cobra.Command, args []string, f headersFlags) error {
	received := time.Now()
	if f.now != "" {
		t, err := time.Parse(time.RFC3339Nano, f.now)
		if err != nil {
			return usageError(fmt.Errorf("--now %q: want RFC 3339, such as 2026-03-26T16:00:00Z", f.now))
		}
		received = t
	}
	mode, err := rlheader.ParseResetMode(f.profile)
	if err != nil {
		return usageError(fmt.Errorf("--profile: %w", err))
	}
	rules, err := parseVerdictRules(f.rules)
	if err != nil {
		return usageError(err)
	}
	if f.maxRetryAfter < 0 {
		return usageError(fmt.Errorf("--max-retry-after %v: want 0 (no flag) or more", f.maxRetryAfter))
	}
	prof := rlheader.Profile{Reset: mode, MaxRetryAfter: f.maxRetryAfter}
	if f.maxRetryAfter == 0 {
		prof.MaxRetryAfter = -1 // 0 on the command line means "no cap"
	}

	var in io.Reader = cmd.InOrStdin()
	name := "standard input"
	if len(args) == 1 && args[0] != "-" {
		fh, err := os.Open(args[0])
		if err != nil {
			return usageError(err) // an input file, as crawl's URL file
		}
		defer fh.Close()
		in, name = fh, args[0]
	}
	data, err := io.ReadAll(io.LimitReader(in, headMaxBytes+1))
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("reading %s: %w", name, err)}
	}
	if len(data) > headMaxBytes {
		// Said: a Retry-After past the cap was dropped without a word,
		// and the report read "no wait asked for".
		data = data[:headMaxBytes]
		fmt.Fprintf(cmd.ErrOrStderr(), "exitgate headers: %s is longer than %d MiB: only its first %d MiB are read, and a header past them is not seen\n", name, headMaxBytes>>20, headMaxBytes>>20)
	}
	hd := rawhead.Parse(data)
	if hd.Status == 0 && len(hd.Header) == 0 {
		return usageError(fmt.Errorf("no response head in %s: want a status line or header lines", name)) // bad input, as a missing file is
	}
	if f.now == "" {
		// A saved head is read as of when it was sent: its Date. The
		// README's own example, a GitHub 429 of March, read "wait 0s",
		// its Date far from today's clock and its reset long past. (A
		// head just received has a Date of about now anyway.)
		for name, vs := range hd.Header { // (names kept as spelled: date, in HTTP/2)
			if strings.EqualFold(name, "Date") && len(vs) > 0 {
				// Not one from the future: a clock years ahead is the
				// server's error, which the parser then sets aside.
				if d, err := http.ParseTime(strings.TrimSpace(vs[0])); err == nil && !d.After(received.Add(time.Minute)) {
					received = d
				}
			}
		}
	}
	rep := explainHead(hd, received, prof, rules)
	if f.json {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	for _, p := range hd.Problems {
		fmt.Fprintf(cmd.ErrOrStderr(), "exitgate headers: %s: %s: %q\n", p.Header, p.Reason, p.Value)
	}
	return writeHeadersText(cmd.OutOrStdout(), rep, received)
}

func parseVerdictRules(specs []string) (classify.Rules, error) {
	var r classify.Rules
	for _, s := range specs {
		code, name, ok := strings.Cut(s, "=")
		n, err := strconv.Atoi(strings.TrimSpace(code))
		if !ok || err != nil || n < 100 || n > 599 {
			return r, fmt.Errorf("--rule %q: want STATUS=VERDICT, such as 403=throttled", s)
		}
		v, err := verdict.Parse(strings.TrimSpace(name))
		if err != nil {
			return r, fmt.Errorf("--rule %q: %w", s, err)
		}
		if r.Status == nil {
			r.Status = map[int]verdict.Verdict{}
		}
		r.Status[n] = v
	}
	return r, nil
}

// headersReport is the --json output.
type headersReport struct {
	Status              *int              `json:"status"`
	StatusLine          string            `json:"status_line,omitempty"`
	Verdict             *string           `json:"verdict"`
	Meaning             string            `json:"meaning,omitempty"`
	Received            string            `json:"received"`
	ServerDate          *string           `json:"server_date"`
	RetryAfterSeconds   *float64          `json:"retry_after_seconds"`
	RetryAt             *string           `json:"retry_at"`
	RetryAfterExcessive bool              `json:"retry_after_excessive"`
	WaitSeconds         *float64          `json:"wait_seconds"`
	Limit               *int64            `json:"limit"`
	Remaining           *int64            `json:"remaining"`
	WindowSeconds       *float64          `json:"window_seconds"`
	ResetSeconds        *float64          `json:"reset_seconds"`
	ResetAt             *string           `json:"reset_at"`
	Scope               string            `json:"scope"`
	Bucket              *string           `json:"bucket"`
	Policies            []policyReport    `json:"policies"`
	Sources             map[string]string `json:"sources"`
	Ignored             []ignoredReport   `json:"ignored"`
}

type policyReport struct {
	Name          string   `json:"name"`
	Quota         *int64   `json:"quota"`
	WindowSeconds *float64 `json:"window_seconds"`
	Unit          string   `json:"unit"`
	Partition     *string  `json:"partition"`
	Remaining     *int64   `json:"remaining"`
	ResetSeconds  *float64 `json:"reset_seconds"`
	Source        string   `json:"source"`
}

type ignoredReport struct {
	Header string `json:"header"`
	Value  string `json:"value"`
	Reason string `json:"reason"`
}

// verdictMeaning says in plain words what exitgate does with a verdict.
func verdictMeaning(v verdict.Verdict) string {
	switch v {
	case verdict.OK:
		return "this lane and the host may speed up"
	case verdict.Throttled:
		return "the server throttled this lane: cool it down, learn a lower capacity, send the URL to another exit"
	case verdict.Busy:
		return "the host is overloaded: pause the whole host, not just this lane"
	case verdict.Retryable:
		return "a passing failure: retry this request later with backoff"
	case verdict.Banned:
		return "this lane looks blocked: quarantine it (this host through this exit)"
	case verdict.ProxyFailure:
		return "the proxy failed: mark the exit unhealthy; the URL is not charged an attempt"
	case verdict.Fatal:
		return "do not retry: abandon the URL with this reason"
	case verdict.Forbidden:
		return "this URL is forbidden here: try it through another exit, then abandon it; only a wave of them from several URLs quarantines the lane"
	}
	return ""
}

func hdrSecs(d time.Duration) *float64 { f := d.Seconds(); return &f }
func hdrPtr[T any](v T) *T             { return &v }
func hdrStamp(t time.Time) string      { return t.UTC().Format(time.RFC3339Nano) }

// explainHead parses and classifies a head into the report both output
// modes print.
func explainHead(hd rawhead.Head, received time.Time, prof rlheader.Profile, rules classify.Rules) headersReport {
	sig := rlheader.Parse(hd.Header, received, prof)
	rep := headersReport{
		StatusLine: hd.StatusLine,
		Received:   hdrStamp(received),
		Scope:      sig.Scope.String(),
		Policies:   []policyReport{},
		Sources:    map[string]string{},
		Ignored:    []ignoredReport{},
	}
	if hd.Status != 0 {
		v := classify.Response(hd.Status, sig, hd.Body, rules)
		rep.Status, rep.Verdict, rep.Meaning = hdrPtr(hd.Status), hdrPtr(v.String()), verdictMeaning(v)
	}
	if !sig.ServerDate.IsZero() {
		rep.ServerDate = hdrPtr(hdrStamp(sig.ServerDate))
	}
	if sig.HasRetryAfter {
		rep.RetryAfterSeconds, rep.RetryAt = hdrSecs(sig.RetryAfter), hdrPtr(hdrStamp(sig.RetryAfterAt))
		rep.RetryAfterExcessive = sig.RetryAfterExcessive
	}
	if d, ok := sig.Wait(); ok {
		rep.WaitSeconds = hdrSecs(d)
	}
	if sig.HasLimit {
		rep.Limit = hdrPtr(sig.Limit)
	}
	if sig.HasRemaining {
		rep.Remaining = hdrPtr(sig.Remaining)
	}
	if sig.HasWindow {
		rep.WindowSeconds = hdrSecs(sig.Window)
	}
	if sig.HasReset {
		rep.ResetSeconds, rep.ResetAt = hdrSecs(sig.Reset), hdrPtr(hdrStamp(sig.ResetAt))
	}
	if sig.Bucket != "" {
		rep.Bucket = hdrPtr(sig.Bucket)
	}
	for _, p := range sig.Policies {
		pr := policyReport{Name: p.Name, Unit: p.Unit, Source: p.Source}
		if pr.Unit == "" {
			pr.Unit = rlheader.UnitRequests
		}
		if p.HasQuota {
			pr.Quota = hdrPtr(p.Quota)
		}
		if p.Window > 0 {
			pr.WindowSeconds = hdrSecs(p.Window)
		}
		if p.Partition != nil {
			pr.Partition = hdrPtr(":" + base64.StdEncoding.EncodeToString(p.Partition) + ":")
		}
		if p.HasRemaining {
			pr.Remaining = hdrPtr(p.Remaining)
		}
		if p.HasReset {
			pr.ResetSeconds = hdrSecs(p.Reset)
		}
		rep.Policies = append(rep.Policies, pr)
	}
	for k, v := range map[string]string{
		"retry_after": sig.Sources.RetryAfter, "limit": sig.Sources.Limit, "remaining": sig.Sources.Remaining,
		"window": sig.Sources.Window, "reset": sig.Sources.Reset, "scope": sig.Sources.Scope, "bucket": sig.Sources.Bucket,
	} {
		if v != "" {
			rep.Sources[k] = v
		}
	}
	for _, i := range append(hd.Problems, sig.Ignored...) {
		rep.Ignored = append(rep.Ignored, ignoredReport(i))
	}
	return rep
}

// writeHeadersText prints the report for people.
func writeHeadersText(w io.Writer, r headersReport, received time.Time) error {
	var b strings.Builder
	row := func(k, format string, a ...any) { fmt.Fprintf(&b, "%-10s %s\n", k, fmt.Sprintf(format, a...)) }
	from := func(key string) string {
		if s := r.Sources[key]; s != "" {
			return " (" + s + ")"
		}
		return ""
	}
	orUnknown := func(p *int64, key string) string {
		if p == nil {
			return "unknown"
		}
		return strconv.FormatInt(*p, 10) + from(key)
	}
	if r.Status != nil {
		_, text, _ := strings.Cut(r.StatusLine, " ")
		row("status", "%s", strings.TrimSpace(text))
		row("verdict", "%s: %s", *r.Verdict, r.Meaning)
	} else {
		row("status", "none (headers only; no verdict)")
	}
	switch {
	case r.WaitSeconds != nil:
		where := "this lane"
		if r.Verdict != nil && *r.Verdict == verdict.Busy.String() {
			where = "this host"
		}
		src := from("retry_after")
		switch {
		case r.RetryAfterSeconds != nil:
		case r.Remaining != nil && *r.Remaining == 0 && r.Sources["reset"] != "":
			src = " (quota exhausted until the reset, " + r.Sources["reset"] + ")"
		default:
			src = " (a quota is exhausted until its reset)"
		}
		row("wait", "wait %s before the next request on %s%s", hdrFmtSecs(*r.WaitSeconds), where, src)
		if r.RetryAfterExcessive {
			row("", "that is longer than the cap: a crawl honours it up to a day, and parks a URL whose wait passes its --max-wait rather than hold a worker")
		}
	case r.Remaining != nil && *r.Remaining > 0:
		row("wait", "no wait asked for; %d left in this window", *r.Remaining)
	default:
		row("wait", "no wait asked for")
	}
	row("limit", "%s", orUnknown(r.Limit, "limit"))
	row("remaining", "%s", orUnknown(r.Remaining, "remaining"))
	if r.WindowSeconds != nil {
		row("window", "%s%s", hdrFmtSecs(*r.WindowSeconds), from("window"))
	} else {
		row("window", "unknown")
	}
	if r.ResetSeconds != nil {
		row("reset", "in %s, at %s%s", hdrFmtSecs(*r.ResetSeconds), *r.ResetAt, from("reset"))
	} else {
		row("reset", "unknown")
	}
	row("scope", "%s%s", r.Scope, from("scope"))
	if r.Bucket != nil {
		row("bucket", "%s%s", *r.Bucket, from("bucket"))
	}
	if r.ServerDate != nil {
		row("clock", "server Date %s; received %s (dates are measured against the server's Date)", *r.ServerDate, hdrStamp(received))
	}
	if len(r.Policies) > 0 {
		b.WriteString("policies\n")
		for _, p := range r.Policies {
			name := p.Name
			if name == "" {
				name = "(unnamed)"
			}
			desc := "quota unknown"
			if p.Quota != nil {
				desc = fmt.Sprintf("%d %s", *p.Quota, p.Unit)
				if p.WindowSeconds != nil {
					desc += " per " + hdrFmtSecs(*p.WindowSeconds)
				}
			}
			if p.Remaining != nil {
				desc += fmt.Sprintf(", %d remaining", *p.Remaining)
			}
			if p.ResetSeconds != nil {
				desc += ", resets in " + hdrFmtSecs(*p.ResetSeconds)
			}
			if p.Partition != nil {
				desc += ", partition " + *p.Partition
			}
			fmt.Fprintf(&b, "  %s: %s (%s)\n", name, desc, p.Source)
		}
	}
	if len(r.Ignored) > 0 {
		b.WriteString("ignored\n")
		ig := append([]ignoredReport(nil), r.Ignored...)
		sort.SliceStable(ig, func(i, j int) bool {
			return strings.HasPrefix(ig[i].Header, "line ") && !strings.HasPrefix(ig[j].Header, "line ")
		})
		for _, i := range ig {
			fmt.Fprintf(&b, "  %s: %q: %s\n", i.Header, i.Value, i.Reason)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// hdrFmtSecs prints seconds as a Go duration, rounded to the millisecond.
func hdrFmtSecs(s float64) string {
	if s >= 1<<62/1e9 {
		return "forever"
	}
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}
