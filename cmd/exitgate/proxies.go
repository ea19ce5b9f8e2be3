package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/exitgate/exitgate/pool"
	"github.com/spf13/cobra"
)

// Exit codes of `proxies check`.
const (
	exitSomeFailed = exitFailed // at least one exit failed (or duplicated, with --fail-duplicates)
	exitBadInput   = exitUsage  // bad flags or bad lines in the list: nothing was checked
)

func newProxiesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "proxies",
		Short: "Inspect and check proxy exits",
	}
	cmd.AddCommand(newProxiesCheckCmd())
	return group(cmd)
}

type proxiesCheckFlags struct {
	proxyURLs     []string
	template      string
	sessions      int
	echoURL       string
	ipHeader      string
	timeout       time.Duration
	concurrency   int
	json          bool
	failDuplicate bool
}

func newProxiesCheckCmd() *cobra.Command {
	var f proxiesCheckFlags
	cmd := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Check every exit: credentials, reachability, exit IP, latency",
		Long: `check fetches an IP-echo URL through every exit concurrently and prints, per exit,
whether it works, the IP the target sees, the latency and what is wrong.

FILE is a proxy list, one exit per line ("-" reads stdin):
  http://user:pass@host:port   https://…  socks5://…  socks5h://…
  host:port   user:pass@host:port   host:port:user:pass   [2001:db8::1]:8080
  bind:127.0.0.11   bind:127.0.0.11-127.0.0.30   direct
  # comments and blank lines are ignored
--proxy-template adds sticky sessions of a rotating gateway. Without FILE and
template, the direct exit (this machine's own address) is checked.

A 407 (or tinyproxy's 401) is reported as rejected credentials, a refused connection
as unreachable; exits that resolve to the same IP are flagged "dup" (they are one
identity to a target). Passwords are never printed.

Exit status: 0 all exits work; 1 some failed (or duplicated, with
--fail-duplicates); 2 bad flags or bad lines in FILE (nothing is checked).`,
		Example: `  exitgate proxies check proxies.txt
  exitgate proxies check --proxy-template 'http://user-session-{session}:pass@gw.example:7777' --sessions 50
  exitgate proxies check --json --echo-url http://127.0.0.1:8080/ip proxies.txt`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.MaximumNArgs(1)(cmd, args); err != nil {
				return &exitError{exitBadInput, err}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			file := ""
			if len(args) == 1 {
				file = args[0]
			}
			return runProxiesCheck(cmd, file, f)
		},
	}
	cmd.SetFlagErrorFunc(flagError(exitBadInput))
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.proxyURLs, "proxy", "x", nil, "one proxy `URL` to check, as curl spells it; repeatable, and added to FILE's exits")
	fl.StringVar(&f.template, "proxy-template", "", "rotating gateway URL with a {session} placeholder; each session is one sticky exit")
	fl.IntVar(&f.sessions, "sessions", 10, "number of sessions to expand --proxy-template into (1-100000)")
	fl.StringVar(&f.echoURL, "echo-url", pool.DefaultEchoURL, "URL that answers with the caller's IP (plain text, or JSON with \"ip\"/\"origin\")")
	fl.StringVar(&f.ipHeader, "exit-ip-header", "", "response header in which the provider reports the exit IP, e.g. X-Exit-IP; wins over the echo body")
	fl.DurationVar(&f.timeout, "timeout", 15*time.Second, "time allowed per exit, connect and answer included")
	fl.IntVar(&f.concurrency, "concurrency", 16, "exits checked at once")
	fl.BoolVar(&f.json, "json", false, "print JSON instead of a table")
	fl.BoolVar(&f.failDuplicate, "fail-duplicates", false, "exit 1 when two exits resolve to the same IP")
	return cmd
}

func runProxiesCheck(cmd *cobra.Command, file string, f proxiesCheckFlags) error {
	if file == "" && len(f.proxyURLs) == 0 && f.template == "" {
		// Nothing to check: it checked "direct" unsaid, and failed on the
		// echo host of a machine with no way out.
		fmt.Fprintln(cmd.ErrOrStderr(), "exitgate: warning: no exits given (FILE, -x or --proxy-template): checking this machine's own address (direct)")
	}
	exits, err := loadExits(cmd, file, f)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	results, err := pool.Check(ctx, exits, pool.CheckConfig{
		EchoURL:     f.echoURL,
		Header:      f.ipHeader,
		Timeout:     f.timeout,
		Concurrency: f.concurrency,
	})
	if err != nil {
		return &exitError{exitBadInput, err}
	}
	var failed, dups int
	for _, r := range results {
		switch {
		case r.Failed():
			failed++
		case r.Problem == pool.DuplicateIP:
			dups++
		}
	}
	out := cmd.OutOrStdout()
	if f.json {
		err = writeCheckJSON(out, results, failed, dups)
	} else {
		err = writeCheckTable(out, results, failed, dups)
	}
	if err != nil {
		return err
	}
	switch {
	case failed > 0:
		return &exitError{exitSomeFailed, fmt.Errorf("%d of %d exits failed", failed, len(results))}
	case dups > 0 && f.failDuplicate:
		return &exitError{exitSomeFailed, fmt.Errorf("%d of %d exits share an exit IP with another", dups, len(results))}
	}
	return nil
}

// loadExits reads FILE and expands the template; any bad input refuses the whole run.
func loadExits(cmd *cobra.Command, file string, f proxiesCheckFlags) ([]pool.Exit, error) {
	bad := func(err error) error { return &exitError{exitBadInput, err} }
	if f.timeout <= 0 {
		return nil, bad(errors.New("--timeout must be positive"))
	}
	if f.concurrency < 1 {
		return nil, bad(errors.New("--concurrency must be at least 1"))
	}
	if cmd.Flags().Changed("sessions") && f.template == "" {
		return nil, bad(errors.New("--sessions needs --proxy-template"))
	}
	var exits []pool.Exit
	if file != "" || len(f.proxyURLs) > 0 {
		var (
			list []pool.Exit
			err  error
		)
		if file == "-" {
			var data []byte
			if data, err = io.ReadAll(cmd.InOrStdin()); err == nil {
				list, err = parseProxies("stdin", data, f.proxyURLs)
			}
		} else {
			list, err = loadProxies(file, f.proxyURLs)
		}
		if errors.Is(err, errNoExits) && f.template != "" {
			err = nil // the template's exits, and -x's if any
		}
		var lineErrs pool.LineErrors
		if errors.As(err, &lineErrs) {
			return nil, bad(fmt.Errorf("%d bad line(s), nothing checked:\n%w", len(lineErrs), err))
		}
		if err != nil {
			return nil, bad(err)
		}
		exits = list
	}
	if f.template != "" {
		sessions, err := pool.FromTemplate(f.template, f.sessions)
		if err != nil {
			return nil, bad(fmt.Errorf("--proxy-template: %w", err))
		}
		exits = append(exits, sessions...)
	}
	if len(exits) == 0 {
		exits = []pool.Exit{pool.DirectExit()}
	}
	return exits, nil
}

func checkStatus(r pool.CheckResult) string {
	switch {
	case r.Failed():
		return "fail"
	case r.Problem == pool.DuplicateIP:
		return "dup"
	}
	return "ok"
}

func writeCheckTable(w io.Writer, results []pool.CheckResult, failed, dups int) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EXIT\tSTATUS\tIP\tLATENCY\tPROBLEM")
	for _, r := range results {
		ip := "-"
		if r.IP.IsValid() {
			ip = r.IP.String()
		}
		problem := r.Detail
		if problem == "" {
			problem = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Exit.ID(), checkStatus(r), ip, r.Latency.Round(time.Millisecond), problem)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d exits: %d ok, %d failed, %d duplicate IP\n", len(results), len(results)-failed-dups, failed, dups)
	return err
}

type checkJSON struct {
	Exits      []checkJSONExit `json:"exits"`
	OK         int             `json:"ok"`
	Failed     int             `json:"failed"`
	Duplicates int             `json:"duplicates"`
}

type checkJSONExit struct {
	ID          string  `json:"id"`
	Exit        string  `json:"exit"` // redacted
	Status      string  `json:"status"`
	IP          string  `json:"ip,omitempty"`
	LatencyMS   float64 `json:"latency_ms"`
	Problem     string  `json:"problem,omitempty"`
	Detail      string  `json:"detail,omitempty"`
	DuplicateOf string  `json:"duplicate_of,omitempty"`
}

func writeCheckJSON(w io.Writer, results []pool.CheckResult, failed, dups int) error {
	doc := checkJSON{Exits: make([]checkJSONExit, 0, len(results)), OK: len(results) - failed - dups, Failed: failed, Duplicates: dups}
	for _, r := range results {
		e := checkJSONExit{
			ID:          r.Exit.ID(),
			Exit:        r.Exit.String(),
			Status:      checkStatus(r),
			LatencyMS:   float64(r.Latency.Microseconds()) / 1000,
			Detail:      r.Detail,
			DuplicateOf: r.DuplicateOf,
		}
		if r.IP.IsValid() {
			e.IP = r.IP.String()
		}
		if r.Problem != pool.NoProblem {
			e.Problem = r.Problem.String()
		}
		doc.Exits = append(doc.Exits, e)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
