package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/exitgate/exitgate/dashboard"
	"github.com/exitgate/exitgate/monitor"
	"github.com/exitgate/exitgate/report"
)

func newStatusCmd() *cobra.Command {
	var (
		asJSON  bool
		rows    int
		watch   time.Duration
		timeout time.Duration
		fleet   statusFlags
	)
	cmd := &cobra.Command{
		Use:   "status ADDR | status DIR | status --redis URL --crawl NAME",
		Short: "Print a running crawl's dashboard in a terminal (hosts, exits, parked and abandoned URLs, events, the learner's changes), or a distributed crawl's fleet",
		Long: `status reads the state of a crawl started with --ui ADDR (http://ADDR/api/state)
and prints the dashboard's tables: the totals; each host's rate, learned capacity,
429 ratio against its budget, alert, circuit breaker and warnings; each exit's
counts and reputation on each host; what is parked and why; abandoned URLs by
reason; the monitor's latest events and the learner's latest change records.

Given a crawl's --out DIR instead, it prints what its runs add up to (its
runs/, read afresh: a crawl that is over, was killed, or runs still, up to
its last checkpoint), as the crawl's table at its end.

With --redis and --crawl instead of ADDR it shows a distributed crawl: its
workers, the exits each owns, the hosts' learned rates, 429s and the queue.`,
		Example: `  exitgate status 127.0.0.1:8080
  exitgate status --watch 5s 127.0.0.1:8080
  exitgate status --json http://127.0.0.1:8080
  exitgate status ./exitgate-out
  exitgate status --redis redis://127.0.0.1:6379 --crawl shop`,
		Args: func(cmd *cobra.Command, args []string) error {
			// (Checked before the environment is applied: read here, as
			// crawl reads EXITGATE_REDIS; EXITGATE_STATUS_REDIS was
			// taken for no --redis at all.)
			// An ADDR or DIR given wins over a fleet named only by the
			// environment; a flag given, even empty, wins over its
			// variable.
			explicit := cmd.Flags().Changed("redis") || cmd.Flags().Changed("crawl")
			if len(args) == 1 && !explicit {
				return nil
			}
			flagOr := func(name, v string) string {
				if cmd.Flags().Changed(name) {
					return v
				}
				return os.Getenv(envName(cmd, name))
			}
			redis, crawl := flagOr("redis", fleet.redis), flagOr("crawl", fleet.crawl)
			if redis == "" && crawl != "" {
				// It read ADDR as an unknown command.
				return usageError(fmt.Errorf("--crawl names a distributed crawl: give its --redis too (and no ADDR)"))
			}
			want := cobra.ExactArgs(1)
			if redis != "" || crawl != "" {
				want = cobra.NoArgs
			}
			if len(args) == 0 && redis == "" {
				// cobra's "accepts 1 arg(s), received 0" named nothing.
				return usageError(errors.New("status needs what to show: a running crawl's --ui ADDR, a crawl's --out DIR, or --redis URL --crawl NAME for a distributed one (see exitgate status --help)"))
			}
			if (redis != "" || crawl != "") && len(args) > 0 {
				// (cobra said: unknown command "./out")
				return usageError(fmt.Errorf("status shows --redis and --crawl's distributed crawl, or %s: not both", args[0]))
			}
			if err := want(cmd, args); err != nil {
				return usageError(err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case rows < 0:
				return usageError(fmt.Errorf("--rows %d: want 0 or more", rows))
			case watch < 0:
				return usageError(fmt.Errorf("--watch %v: want 0 or more", watch))
			case timeout <= 0:
				return usageError(fmt.Errorf("--timeout %v: want above 0", timeout))
			}
			onLine := func(name string) bool { // given on the command line, not by its variable
				f := cmd.Flags().Lookup(name)
				return f.Changed && len(f.Annotations[envSetAnnotation]) == 0
			}
			if (fleet.redis != "" || fleet.crawl != "") && (len(args) == 0 || onLine("redis") || onLine("crawl")) {
				if fleet.redis == "" || fleet.crawl == "" {
					return usageError(fmt.Errorf("a distributed crawl's status needs both --redis and --crawl"))
				}
				if cmd.Flags().Changed("rows") {
					// Accepted and ignored before: a fleet's status
					// lists no events or change records.
					return usageError(fmt.Errorf("--rows is for a crawl's dashboard (ADDR): a distributed crawl's status lists no events or change records"))
				}
				fleet.json = asJSON
				return watchFleetStatus(cmd.Context(), cmd.OutOrStdout(), fleet, watch, timeout)
			}
			if fi, err := os.Stat(args[0]); err == nil && fi.IsDir() {
				// A crawl's --out: what its runs added up to (it was looked
				// up as a host named after the directory).
				if cmd.Flags().Changed("rows") {
					return usageError(fmt.Errorf("--rows is for a crawl's dashboard (ADDR): a --out's summary lists no events or change records"))
				}
				return repeat(cmd.Context(), cmd.OutOrStdout(), watch, func(context.Context) error {
					return printOutSummary(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], asJSON)
				})
			} else if looksLikePath(args[0]) {
				// (./nonexist was looked up as the host ".")
				if err == nil {
					return usageError(fmt.Errorf("%s is a file: give the crawl's --out directory, or the --ui ADDR of a running crawl", args[0]))
				}
				return usageError(fmt.Errorf("%s: no such directory (a crawl's --out), and no address (host:port of a crawl's --ui)", args[0]))
			}
			addr, err := statusURL(args[0])
			if err != nil {
				return usageError(err)
			}
			return runStatus(cmd.Context(), cmd.OutOrStdout(), addr, asJSON, rows, watch, timeout)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&asJSON, "json", false, "print the state as JSON (the dashboard's /api/state, without history)")
	fl.IntVar(&rows, "rows", 10, "events and change records to print")
	fl.DurationVar(&watch, "watch", 0, "print again every `D` until interrupted (0: once); with DIR and --redis too")
	fl.DurationVar(&timeout, "timeout", 5*time.Second, "timeout of one read of the state (with --redis, of Redis's)")
	fl.StringVar(&fleet.redis, "redis", "", "a distributed crawl's Redis `URL`, redis://host:port (a cluster node reaches the cluster), instead of ADDR")
	fl.StringVar(&fleet.crawl, "crawl", "", "with --redis: the distributed crawl's `NAME`")
	return cmd
}

// looksLikePath reports whether a status argument is written as a path,
// not an address.
func looksLikePath(arg string) bool {
	return !strings.Contains(arg, "://") && (strings.HasPrefix(arg, ".") || strings.ContainsRune(arg, filepath.Separator))
}

// printOutSummary prints what the runs recorded in a crawl's --out add up
// to, as the crawl's own table at its end (or as JSON, with asJSON): its
// runs/ read afresh, so that a crawl killed before it wrote summary.json,
// or one still running (up to its last checkpoint), is shown too.
func printOutSummary(w, stderr io.Writer, dir string, asJSON bool) error {
	sum, err := report.ReadSummary(dir)
	if err != nil && sum.Runs == 0 {
		if _, serr := os.Stat(filepath.Join(dir, report.RunsDir)); errors.Is(serr, fs.ErrNotExist) {
			if _, cerr := os.Stat(filepath.Join(dir, crawlRecordFile)); cerr == nil {
				// A crawl in its first seconds, or killed in them: it was
				// "a directory without runs", exit 2, as if not a crawl's.
				return fmt.Errorf("%s holds a crawl with no run summary yet (a run writes its first a second in, then every second for half a minute, every 30 s after, and at its end): try again in a moment", dir)
			}
			return usageError(fmt.Errorf("%s is a directory without runs: give a crawl's --out, or the --ui ADDR of a running one", dir))
		}
		return err
	}
	if err != nil {
		fmt.Fprintf(stderr, "exitgate: %v\n", err) // some run left out; the rest shown
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	fmt.Fprintf(w, "%s: %d run(s) since %s", dir, sum.Runs, sum.Started.Local().Format(time.DateTime))
	report.WriteTable(w, sum)
	return nil
}

// watchFleetStatus prints a distributed crawl's status, each read bounded
// by timeout, and again every watch until ctx ends (0: once). --watch and
// --timeout did nothing here.
func watchFleetStatus(ctx context.Context, w io.Writer, f statusFlags, watch, timeout time.Duration) error {
	return repeat(ctx, w, watch, func(ctx context.Context) error {
		rctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return runFleetStatus(rctx, w, f)
	})
}

// repeat calls show, then again every watch until ctx ends (0: once), a
// blank line between; a read cut by the end of ctx while watching ends it
// quietly.
func repeat(ctx context.Context, w io.Writer, watch time.Duration, show func(context.Context) error) error {
	for {
		err := show(ctx)
		if err != nil && watch > 0 && ctx.Err() != nil {
			return nil
		}
		if err != nil || watch == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(watch):
		}
		fmt.Fprintln(w)
	}
}

// statusURL checks ADDR, a crawl's --ui address (host:port, or an http(s)
// URL of it), before anything is asked of it: "http://" alone was looked up
// as a host named http, and ftp://x failed as an error of the run (exit 1),
// not of the argument.
func statusURL(addr string) (string, error) {
	u := addr
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	u = strings.TrimSuffix(u, "/")
	p, err := url.Parse(u)
	switch {
	case err != nil:
		return "", fmt.Errorf("ADDR %q: %v", addr, err)
	case p.Scheme != "http" && p.Scheme != "https":
		return "", fmt.Errorf("ADDR %q: scheme %q (want host:port, or an http:// URL of a crawl's --ui)", addr, p.Scheme)
	case p.Host == "":
		return "", fmt.Errorf("ADDR %q: no host (want host:port, the crawl's --ui)", addr)
	}
	return u, nil
}

func runStatus(ctx context.Context, w io.Writer, addr string, asJSON bool, rows int, watch, timeout time.Duration) error {
	u := strings.TrimSuffix(addr, "/")
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	u += "/api/state?history=0"
	client := &http.Client{Timeout: timeout}
	return repeat(ctx, w, watch, func(ctx context.Context) error {
		s, raw, err := readStatus(ctx, client, u)
		if err != nil {
			return err
		}
		if asJSON {
			_, err := w.Write(raw)
			return err
		}
		return dashboard.WriteTables(w, s, rows)
	})
}

func readStatus(ctx context.Context, client *http.Client, u string) (monitor.Status, []byte, error) {
	var s monitor.Status
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return s, nil, usageError(fmt.Errorf("status: %w", err))
	}
	resp, err := client.Do(req)
	if err != nil {
		return s, nil, fmt.Errorf("status: %w (is a crawl running with --ui at that address?)", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return s, nil, fmt.Errorf("status: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return s, nil, fmt.Errorf("status: %s answered %s", u, resp.Status)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, nil, fmt.Errorf("status: %s is not an exitgate dashboard: %w", u, err)
	}
	return s, raw, nil
}
