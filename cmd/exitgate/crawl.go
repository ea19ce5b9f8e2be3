package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/fleet"
	"github.com/exitgate/exitgate/frontier"
	redisfr "github.com/exitgate/exitgate/frontier/redis"
	"github.com/exitgate/exitgate/frontier/sqlite"
	"github.com/exitgate/exitgate/internal/urlfile"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/monitor"
	"github.com/exitgate/exitgate/pool"
	"github.com/exitgate/exitgate/report"
)

type crawlFlags struct {
	exitFlags
	headers      []string
	out          string
	maxRetries   int
	maxWait      time.Duration
	duration     time.Duration
	timeout      time.Duration
	ignoreRobots bool
	userAgent    string
	userAgentSet bool // --user-agent was given (command line, environment or config)
	durable      bool
	progress     time.Duration
	maxBody      string
	allowPrivate bool
	format       string
	append       bool
	fleetFlags                 // distributed mode: --redis, --crawl, --worker-id, --fleet-ttl
	leaseTTL     time.Duration // and its frontier's leases
	mon          monitorFlags
	// stdin is the URL list when URLFILE is "-" (not a flag).
	stdin io.Reader
}

func newCrawlCmd() *cobra.Command {
	var f crawlFlags
	cmd := &cobra.Command{
		Use:   "crawl [flags] URLFILE  |  crawl --redis URL --crawl NAME [URLFILE]",
		Short: "Crawl a URL list through a proxy pool, politely, losing nothing",
		Long: `crawl fetches every URL of URLFILE (one per line, # comments allowed; - reads
them from standard input, kept in the output directory) through
the exits of a proxy pool, keeping one learned budget per (host, exit) lane and a
polite ceiling per host. Jobs live in a durable frontier in the output directory:
running the same command again resumes where the last run stopped, even after a
kill -9.

Outputs, in --out:
  results.jsonl   one line per finished URL (done, not_found or abandoned, with the reason),
                  written as URLs finish (results.csv with --format csv)
  summary.json    429 ratio, time throttled, effective rate, per exit and per host
  runs/           one summary per run; summary.json adds them up
  bodies/         the body of each successful response, named by job id
  frontier.db     the frontier (SQLite)

Environment: every flag can be set as EXITGATE_ and its name in capitals
(EXITGATE_PROXIES=proxies.txt, EXITGATE_HOST_RATE=20/s; -H and -x take one
value per line), shown under each flag below. The command line wins over the
environment, the environment over --config.

Exit codes:
  0  every URL is done, or not found (404, 410: counted apart in summary.json)
  1  a failure stopped the crawl (no working exit, a body or the frontier could
     not be written, ...); what was done is kept, the rest stays queued
  2  bad flags, arguments, input or config files, an --out or --metrics-addr in use,
     or an unknown command: nothing was done
  3  the crawl finished, but some URLs were abandoned (reasons in summary.json;
     URLs not found, 404 or 410, do not count)
  4  URLs are left to do: stopped by a signal or --duration, or parked until a
     host may be asked again; run the same command again to resume`,
		Example: `  exitgate crawl urls.txt
  exitgate crawl --proxies proxies.txt --host-rate 20/s urls.txt
  exitgate crawl -x http://user:pass@proxy1:8080 -x socks5://proxy2:1080 -H 'Authorization: Bearer TOKEN' urls.txt
  EXITGATE_PROXIES=proxies.txt EXITGATE_OUT=/data/crawl exitgate crawl urls.txt
  exitgate crawl --proxy-template 'http://user-session-{session}:pw@gw.example:7777' --sessions 50 urls.txt
  exitgate crawl --redis redis://10.0.0.5:6379 --crawl shop --proxies proxies.txt urls.txt   # first worker seeds
  exitgate crawl --redis redis://10.0.0.5:6379 --crawl shop --proxies proxies.txt            # others join`,
		Args: func(cmd *cobra.Command, args []string) error {
			check := cobra.ExactArgs(1)
			distributed := false
			if r, _ := cmd.Flags().GetString("redis"); r != "" || os.Getenv("EXITGATE_REDIS") != "" {
				check = cobra.MaximumNArgs(1) // joining a distributed crawl: no URL file needed
				distributed = true
			}
			if len(args) == 0 && !distributed {
				// cobra's "accepts 1 arg(s), received 0" named nothing.
				return usageError(errors.New("crawl needs a URL file: exitgate crawl [flags] URLFILE (one URL per line; - reads standard input; see exitgate crawl --help)"))
			}
			if err := check(cmd, args); err != nil {
				if len(args) > 1 {
					// cobra's "accepts 1 arg(s), received 2" named neither.
					return usageError(fmt.Errorf("crawl takes one URL file, given %d: %q (put the URLs of several files in one, or run a crawl each)", len(args), args))
				}
				return usageError(err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.config != "" {
				if err := applyConfigFile(cmd.Flags(), f.config); err != nil {
					return usageError(err)
				}
			}
			f.userAgentSet = cmd.Flags().Changed("user-agent")
			if err := needs(cmd.Flags(), [2]string{"sessions", "proxy-template"}, [2]string{"lease-ttl", "redis"},
				[2]string{"fleet-ttl", "redis"}, [2]string{"worker-id", "redis"}, [2]string{"crawl", "redis"}); err != nil {
				return usageError(err)
			}
			for _, fl := range []string{"metrics-exits", "metrics-hosts"} {
				if err := needsOneOf(cmd.Flags(), fl, "metrics-addr", "ui"); err != nil {
					return usageError(err)
				}
			}
			if cmd.Flags().Changed("breaker-cooldown") && f.mon.breakerAfter == 0 {
				return usageError(errors.New("--breaker-cooldown does nothing with --breaker-after 0 (no breaker)"))
			}
			if err := f.settleVerbose(cmd.Flags()); err != nil {
				return usageError(err)
			}
			urlFile := ""
			if len(args) > 0 {
				urlFile = args[0]
			}
			if urlFile == "" && f.redis == "" {
				return usageError(fmt.Errorf("accepts 1 arg(s), received 0"))
			}
			f.stdin = cmd.InOrStdin()
			return runCrawl(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f, urlFile)
		},
	}
	fl := cmd.Flags()
	f.exitFlags.register(fl)
	fl.StringArrayVarP(&f.headers, "header", "H", nil, "request `HEADER` \"Name: value\" sent with every request, robots.txt included; repeatable. Authorization and Cookie are not sent on to another host a redirect leads to. An Accept-Encoding of your own stores bodies as the server sends them, not decoded (content_encoding in the results)")
	fl.StringVar(&f.out, "out", "./exitgate-out", "output `DIR`ectory: results, summary, bodies and the frontier")
	fl.IntVar(&f.maxRetries, "max-retries", 5, "retries per URL for errors and bans (429s have their own, larger budget; proxy failures are not charged); 0 or more")
	fl.DurationVar(&f.maxWait, "max-wait", 5*time.Minute, "park threshold: a Retry-After longer than this parks the URL durably until it is due")
	fl.DurationVar(&f.duration, "duration", 0, "stop after this long and leave the rest queued: no request starts after it, and those in flight get 5s (or --timeout, if shorter) to finish before they are aborted and stay queued (0: run until done)")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "timeout of one request, body included")
	fl.BoolVar(&f.ignoreRobots, "ignore-robots", false, "do not fetch or honour robots.txt (Disallow and Crawl-delay)")
	fl.StringVar(&f.userAgent, "user-agent", fetch.DefaultUserAgent, "User-Agent header, also used to pick the robots.txt group; -H 'User-Agent: ...' is the same")
	fl.BoolVar(&f.durable, "durable", false, "fsync the frontier on every change (SQLite synchronous=FULL) and each body before its URL is recorded done; the default survives kill -9 but not power loss (not with --redis: Redis's appendfsync decides)")
	fl.DurationVar(&f.progress, "progress", 10*time.Second, "interval of progress lines when stderr is not a terminal (0: none; at least 100ms)")
	fl.StringVar(&f.maxBody, "max-body", "10MiB", "largest body kept per URL, a `SIZE` (bytes, or with KiB, MiB, GiB, KB, MB, GB); a longer one is cut there and its result says truncated: true")
	fl.BoolVar(&f.append, "append", false, "add the URLs of a URL file other than the one this --out (or, with --redis, this --crawl) was crawled from to that crawl (without it, such a file is refused)")
	fl.StringVar(&f.format, "format", "jsonl", "results file `FORMAT`: jsonl (results.jsonl) or csv (results.csv), written as URLs finish")
	fl.BoolVar(&f.allowPrivate, "allow-private-redirects", false, "follow redirects to loopback, private and link-local addresses from any URL (by default only from URLs on such addresses themselves)")
	f.fleetFlags.register(fl, "the frontier, the workers and the host state shared by every worker started with the same --crawl",
		"the crawl's `NAME`; the first worker seeds it from URLFILE, others join with the same command (URLFILE optional)")
	fl.DurationVar(&f.leaseTTL, "lease-ttl", 15*time.Second, "distributed mode: how long a dead worker's jobs stay leased before another worker may take them (a live worker keeps its leases alive); at least 1s")
	addMonitorFlags(fl, &f.mon)
	return cmd
}

// maxConcurrency bounds --concurrency and --per-host-concurrency: each
// request in flight holds a socket and a buffer, and the engine claims four
// jobs ahead per slot.
const maxConcurrency = 10000

// durationFlag is a duration flag's value to check: never negative, and 0
// only where it means none.
type durationFlag struct {
	name   string
	d      time.Duration
	zeroOK bool          // 0 means none
	least  time.Duration // the shortest above 0 that makes sense; 0: any
}

// checkDurations refuses the first value of flags out of its range, saying
// what the flag takes.
func checkDurations(flags []durationFlag) error {
	for _, d := range flags {
		if d.d < 0 || d.d == 0 && !d.zeroOK || d.d > 0 && d.d < d.least {
			want := "above 0"
			switch {
			case d.least > 0 && d.zeroOK:
				want = fmt.Sprintf("0 (none) or at least %v", d.least)
			case d.least > 0:
				want = fmt.Sprintf("at least %v", d.least)
			case d.zeroOK:
				want = "0 (none) or more"
			}
			return fmt.Errorf("%s %v: want %s", d.name, d.d, want)
		}
	}
	return nil
}

// minProgress is the shortest --progress: 1 ns wrote 2.7 million lines in
// 6 s.
const minProgress = 100 * time.Millisecond

// durationGrace is how long requests in flight at --duration's end may
// take to finish before they are aborted (and stay queued).
const durationGrace = 5 * time.Second

// crawlSetup is everything built from the flags before any work starts, so
// that bad input is refused before a single request is sent.
type crawlSetup struct {
	exits   []pool.Exit
	limCfg  limit.Config
	retry   fetch.RetryPolicy
	urlFile string
	maxBody int64
	format  report.Format
	// header is sent with every request; userAgent also picks the
	// robots.txt group (--user-agent, or -H 'User-Agent: ...').
	header    http.Header
	userAgent string
	// monCfg configures the monitor: 429 budgets, alerts, the breaker.
	monCfg monitor.Config
}

func buildCrawl(f crawlFlags, urlFile string) (crawlSetup, error) {
	var s crawlSetup
	var err error
	if s.limCfg, err = f.limitConfig(); err != nil {
		return s, err
	}
	if f.maxRetries < 0 {
		return s, fmt.Errorf("--max-retries %d: want 0 or more", f.maxRetries)
	}
	if err := checkDistributedFlags(f); err != nil {
		return s, err
	}
	if err := checkDurations([]durationFlag{
		{"--timeout", f.timeout, false, 0},
		{"--max-wait", f.maxWait, false, 0},
		{"--duration", f.duration, true, 0},
		{"--progress", f.progress, true, minProgress},
	}); err != nil {
		return s, err
	}
	if s.format, err = report.ParseFormat(f.format); err != nil {
		return s, fmt.Errorf("--format %w", err)
	}
	if s.maxBody, err = parseSize(f.maxBody); err != nil {
		return s, fmt.Errorf("--max-body: %w", err)
	}
	if s.monCfg, err = monitorConfig(f.mon); err != nil {
		return s, err
	}
	s.retry = fetch.RetryPolicy{MaxRetries: f.maxRetries, MaxWait: f.maxWait}
	if f.maxRetries == 0 {
		s.retry.MaxRetries = -1 // the flag's 0 means none; the struct's 0 means default
	}

	var ua string
	if s.header, ua, err = parseHeaders(f.headers); err != nil {
		return s, err
	}
	s.userAgent = f.userAgent
	if err := checkHeaderValue("--user-agent", f.userAgent); err != nil && strings.TrimSpace(f.userAgent) != "" {
		return s, err
	}
	switch {
	case strings.TrimSpace(f.userAgent) == "":
		// Go's transport sent its own in its place, and robots.txt's
		// group was exitgate's: the flag did nothing it said.
		return s, fmt.Errorf("--user-agent is empty: give the User-Agent to send (default %q)", fetch.DefaultUserAgent)
	case ua != "" && f.userAgentSet && ua != f.userAgent:
		return s, fmt.Errorf("-H 'User-Agent: %s' and --user-agent %q disagree: give one", ua, f.userAgent)
	case ua != "":
		s.userAgent = ua
	}
	s.header.Set("User-Agent", s.userAgent)
	if s.exits, err = f.exits(); err != nil {
		return s, err
	}
	if urlFile != "" && urlFile != stdinList {
		if _, err := os.Stat(urlFile); err != nil {
			return s, fmt.Errorf("URLFILE: %w", err) // (it was "stat urls.txt: ...")
		}
	}
	s.urlFile = urlFile
	return s, nil
}

func runCrawl(ctx context.Context, stdout, stderr io.Writer, f crawlFlags, urlFile string) (result error) {
	setup, err := buildCrawl(f, urlFile)
	if err != nil {
		return usageError(err)
	}
	identity, err := f.identity()
	if err != nil {
		return usageError(err)
	}
	if f.mon.linger > 0 && f.metricsAddr == "" && f.mon.ui == "" {
		// Accepted and ignored before.
		return usageError(fmt.Errorf("--linger keeps --ui and --metrics-addr up after the crawl: give one of them"))
	}
	var metricsLn, uiLn net.Listener
	if f.metricsAddr != "" {
		if metricsLn, err = listenMetrics(f.metricsAddr); err != nil {
			return usageError(err)
		}
		defer metricsLn.Close()
	}
	if f.mon.ui != "" {
		if uiLn, err = listenAddr("--ui", f.mon.ui); err != nil {
			return usageError(err)
		}
		defer uiLn.Close()
	}
	// The log and messages go above the progress bar while one is shown.
	logOut := newSwitchWriter(stderr)
	logger := f.logger(logOut)
	setup.limCfg.Logger = logger

	// The fleet first: a worker it refuses (another list, other shared
	// flags, a fleet of gateways) or that cannot reach Redis leaves
	// nothing in --out (it had marked it a worker's, and the next run
	// warned that Redis had lost the crawl).
	var dist *distributed
	if f.redis != "" {
		if dist, err = openChecked(ctx, f.fleetFlags, setup.exits, sharedSettings(f), logger); err != nil {
			return err
		}
		defer dist.close()
	}
	if err := makeOutDir(f.out); err != nil {
		return usageError(err)
	}
	listUseless := false // this run's URL list held not one usable URL (so far, if a signal stopped its load)
	// undone says this run leaves nothing of its own in --out: refused
	// before any work, or fed a list without one usable URL. What it
	// wrote there is taken back then (below: a first distributed run's
	// marker, a list from standard input, the crawl's record).
	undone := func() bool { return exitCode(result) == exitUsage || listUseless }
	workedBefore := false // this --out was a worker's of this distributed crawl
	if f.redis != "" {
		// (The name was checked with the flags, buildCrawl.)
		release, before, err := claimWorkerOut(f.out, f.crawl)
		if err != nil {
			return usageError(err)
		}
		defer release()
		workedBefore = before
		if !before {
			defer func() {
				if !undone() {
					return
				}
				// Refused on its first run here (a list without one
				// usable URL): the --out is no worker's yet, or the next
				// run warned that Redis had lost the crawl.
				os.Remove(filepath.Join(f.out, crawlRecordFile))
				journal := filepath.Join(f.out, "journal-"+f.crawl+".jsonl")
				if fi, err := os.Stat(journal); err == nil && fi.Size() == 0 {
					os.Remove(journal)
				}
			}()
		}
	}
	var record *crawlRecord
	if f.redis == "" {
		release, err := lockOut(f.out)
		if err != nil {
			return usageError(err)
		}
		defer release()
	}
	stdinKept := "" // where a list from standard input is kept
	// listName names the URL list in messages as the user gave it: the
	// copy of one from standard input is removed when it is refused, and
	// messages named a file that was gone.
	listName := func() string {
		if stdinKept != "" {
			return "standard input"
		}
		return setup.urlFile
	}
	if setup.urlFile == stdinList {
		// Kept in --out under its hash: the list is checked against the
		// crawl's (crawl.json) and read again on a resume like a file.
		var created bool
		if setup.urlFile, created, err = keepStdinList(f.out, f.stdin); err != nil {
			return err
		}
		stdinKept = setup.urlFile
		if created {
			kept := setup.urlFile
			defer func() {
				if undone() {
					// Refused before any work (another crawl's --out,
					// another list): nothing of it is kept (it was, and
					// the next run's --out held a list never crawled).
					os.Remove(kept)
				}
			}()
		}
		urlFile = setup.urlFile
	}
	if setup.urlFile != "" && f.redis == "" {
		if record, err = checkURLFile(f.out, setup.urlFile, f.append); err != nil {
			if stdinKept != "" {
				err = errors.New(strings.ReplaceAll(err.Error(), stdinKept, listName()))
			}
			return usageError(err)
		}
	}

	var fr frontier.Frontier
	start := time.Now()
	if f.redis != "" {
		if err := dist.openFrontier(f, logger); err != nil {
			return err
		}
		defer dist.closeFrontier() // before --out is released: its journal is there
		fr = dist.fr
	} else {
		sync := sqlite.SyncNormal
		if f.durable {
			sync = sqlite.SyncFull
		}
		db, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(f.out, "frontier.db"), Sync: sync})
		if errors.Is(err, sqlite.ErrLocked) {
			// Nothing done: exit 2, as any input refused before work.
			return usageError(fmt.Errorf("%s is in use by another exitgate crawl: wait for it to end, or use another --out", f.out))
		}
		if err != nil {
			return err
		}
		defer db.Close()
		fr = db
		if n, err := db.Recover(ctx, start); err != nil {
			return err
		} else if n > 0 {
			fmt.Fprintf(stderr, "resumed: %d jobs that a stopped run had in flight are queued again\n", n)
		}
	}
	// The list is recorded before its URLs go in: a run stopped while
	// loading them (a signal, kill -9) leaves some in the frontier, and
	// another list must not be taken for this crawl's then (the next run
	// with another list had merged into the part loaded, and refused the
	// rest of the first list as another's).
	if record != nil {
		recordPath := filepath.Join(f.out, crawlRecordFile)
		before, readErr := os.ReadFile(recordPath)
		if err := report.WriteJSON(recordPath, record); err != nil {
			return err
		}
		defer func() {
			if !undone() {
				return
			}
			// Refused (a list without one usable URL), or stopped while
			// loading one before any of it went in: the record goes back
			// to what it was. Kept, it made the corrected list "another
			// list", refused without --append.
			if errors.Is(readErr, fs.ErrNotExist) {
				os.Remove(recordPath)
			} else if readErr == nil {
				os.WriteFile(recordPath, before, 0o644)
			}
		}()
	}
	var loaded urlfile.Loaded
	signalled := false
	listSum := ""
	if dist != nil && setup.urlFile != "" {
		seeds, sum, err := dist.checkList(ctx, f.crawl, setup.urlFile, f.append)
		if err != nil {
			return err
		}
		listSum = sum
		if seeds && workedBefore {
			// The crawl was lost from Redis: seeded again, it fetches
			// again what was done, without a word, and the lists other
			// workers appended are not in it.
			fmt.Fprintf(stderr, "exitgate: warning: this --out was a worker's of crawl %q before, but Redis holds nothing of it (its keys were lost: Redis restarted without persistence, flushed or evicted): it is seeded again from %s, what was done is fetched again, and lists other workers appended (--append) are in it only once appended again\n", f.crawl, setup.urlFile)
		}
	}
	if setup.urlFile != "" { // a worker joining a distributed crawl has none
		// A signal while loading stops the loading at a batch: what went
		// in stays, and the same command again loads the rest (the
		// process had died of the signal, without a word).
		loadCtx, stopLoad := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		loaded, err = urlfile.Push(loadCtx, fr, setup.urlFile)
		signalled = loadCtx.Err() != nil && ctx.Err() == nil
		stopLoad()
		listUseless = loaded.Usable == 0
		if listUseless && dist != nil && listSum != "" {
			// Nor is it the distributed crawl's: a corrected list was
			// refused as another (an --append'ed useless one too).
			if err := dist.unrecordList(ctx, f.crawl, listSum); err != nil {
				logger.Warn("distributed: a URL list without usable URLs left recorded", "err", err)
			}
		}
	}
	added, bad := loaded.Added, loaded.Bad
	for _, b := range bad.Lines {
		fmt.Fprintln(stderr, "exitgate: skipped", listName()+strings.TrimPrefix(b.Error(), setup.urlFile))
	}
	if bad.More > 0 {
		fmt.Fprintf(stderr, "exitgate: skipped %d more bad lines of %s (%d in all; the first %d are shown)\n", bad.More, listName(), bad.Count(), len(bad.Lines))
	}
	if signalled {
		return &exitError{code: exitUnfinished, err: fmt.Errorf(
			"stopped by a signal while loading %s (%d URLs loaded): run the same command again to load the rest and crawl", setup.urlFile, added)}
	}
	if err != nil && setup.urlFile != "" {
		// Each batch is its own commit: what went in stays, and the same
		// command loads the rest. Said as a signal's stop says it: a full
		// --out stopped the load with SQLite's word alone, naming neither
		// the list nor what was kept.
		return fmt.Errorf("loading %s stopped after %d new URLs (kept in the frontier): %w; run the same command again to load the rest, once there is room if the disk is full", setup.urlFile, added, err)
	}
	if err != nil {
		return err
	}
	if setup.urlFile != "" && listUseless {
		// Not one URL of it (an --append'ed list too, which was taken and
		// recorded, exit 0, where the crawl had URLs of its own).
		return usageError(fmt.Errorf("%s: no usable URLs", listName()))
	}
	if stdinKept != "" {
		fmt.Fprintf(stderr, "exitgate: the URL list from standard input is kept as %s\n", stdinKept)
	}
	if dist != nil {
		if listSum != "" {
			if err := dist.loaded(ctx, f.crawl, listSum); err != nil {
				return fmt.Errorf("crawl %q: recording %s loaded: %w", f.crawl, setup.urlFile, err)
			}
		}
		if n, err := dist.partial(ctx, f.crawl); err == nil && n > 0 {
			fmt.Fprintf(stderr, "exitgate: %s\n", loadingNote(f.crawl, n))
		}
		// A worker killed between a host's jobs and the crawl's schedule
		// left the host out of it: nobody claimed its jobs until the
		// stall line's repair, 30 s on. Repaired at every start.
		if err := dist.fr.Repair(ctx); err != nil {
			logger.Warn("frontier: the schedule's repair at start failed", "err", err)
		}
	}
	counts, err := fr.Counts(ctx)
	if err != nil {
		return err
	}
	if counts.Total() == 0 {
		if dist != nil && urlFile == "" {
			return usageError(fmt.Errorf("crawl %q has no URLs yet: the first worker seeds it with a URL file", f.crawl))
		}
		return usageError(fmt.Errorf("%s: no usable URLs", urlFile))
	}
	notFound := "" // 404s and 410s are no abandoned URLs, here as in the summary
	nf := report.CountNotFound(counts.AbandonedByReason)
	if nf > 0 {
		notFound = fmt.Sprintf("%d not found, ", nf)
	}
	fmt.Fprintf(stderr, "exitgate: %d URLs new, %d in the frontier (%d done, %s%d abandoned, %d to do) through %d exits\n",
		added, counts.Total(), counts.Done, notFound, counts.Abandoned-nf, counts.Unfinished(), len(setup.exits))
	f.warnDirect(stderr)

	if dist != nil {
		setup.limCfg.Shared = dist.share
	}
	lim, err := limit.New(setup.limCfg)
	if err != nil {
		return err
	}
	restoreLearned(f.out, lim, time.Now(), stderr)
	onSet := lim.SetExits
	if dist != nil {
		dist.lim = lim
		onSet = dist.onSet
	}
	members := make([]fetch.Member, len(setup.exits))
	for i, e := range setup.exits {
		t := e.Transport(pool.TransportConfig{ResponseHeaderTimeout: f.timeout, ProbeTimeout: min(f.timeout, pool.DefaultProbeTimeout)})
		defer t.CloseIdleConnections()
		members[i] = fetch.Member{ID: e.ID(), Transport: t, ForwardProxy: e.ForwardsHTTP()}
	}
	exits := fetch.NewExitSet(members, identity, onSet)
	if f.echoURL != "" {
		sayResolved(ctx, stderr, exits, len(members))
	}

	tally := metrics.NewTally(start)
	setup.monCfg.Logger = logger
	mon, err := monitor.New(setup.monCfg)
	if err != nil {
		return err
	}
	// The endpoints stay up until the command returns, and --linger
	// after it: a scrape every 15 s missed the final counts of a crawl
	// that closed them 0.1 s after its last request.
	reg, err := newRegistry(tally, mon, f.mon.metricsExits, f.mon.metricsHosts)
	if err != nil {
		return err
	}
	if metricsLn != nil {
		defer serveMetrics(metricsLn, reg, stderr)()
	}
	if uiLn != nil {
		defer serve(uiLn, uiHandler(mon, reg), "dashboard", stderr)()
		fmt.Fprintf(stderr, "dashboard at http://%s/\n", uiLn.Addr())
	}
	var stopSignal atomic.Bool // a signal stopped the run: no linger after it
	if (metricsLn != nil || uiLn != nil) && f.mon.linger > 0 {
		defer func() { // (before the endpoints close)
			if stopSignal.Load() {
				return // the user asked it to end (it lingered the whole --linger after a Ctrl-C)
			}
			if dist != nil {
				// Out of the fleet first: a lingering worker kept its
				// exits from the others for the whole --linger.
				dist.leave()
			}
			mon.End(time.Now()) // the page said "live" over the final counts
			linger(f.mon.linger, stderr)
		}()
	}

	// Results are written as URLs finish; opening reconciles the file with
	// the frontier after a kill, closing after this run.
	results, err := report.OpenResults(ctx, fr, f.out, setup.format)
	if err != nil {
		return err
	}
	core := fetch.NewCore(fetch.CoreConfig{
		OnFinish: func(fin fetch.Finished) {
			if err := results.Add(resultRow(fin, f.out)); err != nil {
				logger.Warn("results: row not written; the frontier has it, the next run writes it", "url", frontier.Redact(fin.Job.URL), "err", err)
			}
		},
		Concurrency:           f.concurrency,
		Retry:                 setup.retry,
		Robots:                !f.ignoreRobots,
		AllowPrivateRedirects: f.allowPrivate,
		UserAgent:             setup.userAgent,
		Logger:                logger,
		LeaseTTL:              leaseTTL(dist),
		Buffer:                dist.buffer(),
	}, mon.CountParks(engineFrontier(fr, dist)), mon.Gate(lim), tally)
	var countsEvery time.Duration // a local frontier's counts are at hand
	if dist != nil {
		countsEvery = 5 * time.Second // a round trip per host
	}
	mon.Attach(monitor.Sources{
		Limiter: lim, Tally: tally, Counts: fr.Counts, CountsEvery: countsEvery, Waiting: core.Waiting,
		Park: core.ParkHost, Quarantine: lim.Quarantine,
	})
	// Bodies go under an absolute path: the frontier records it with the
	// job, and a results row rebuilt from the frontier by a later run,
	// from another working directory or with --out spelt otherwise, must
	// find it (report.ResultOf); relative, it named ../o30/bodies/1.
	absOut, err := filepath.Abs(f.out)
	if err != nil {
		return err
	}
	engine, err := fetch.NewEngine(fetch.EngineConfig{
		Exits:        exits,
		Timeout:      f.timeout,
		BodyDir:      filepath.Join(absOut, report.BodiesDir),
		SyncBodies:   f.durable,
		MaxBodyBytes: setup.maxBody,
		Header:       setup.header,
	}, core)
	if err != nil {
		return err
	}
	if dist != nil {
		dist.stop = engine.Stop // a worker refused on its return stops (fleet.Config.OnRefused)
		if err := dist.join(ctx, roleWorker, f.fleetFlags, core, tally, logger, stderr); err != nil {
			if errors.Is(err, fleet.ErrExitsDiffer) || errors.Is(err, fleet.ErrSettingsDiffer) || errors.Is(err, fleet.ErrIDInUse) {
				return usageError(err) // refused before any work, as a bad flag is
			}
			return err
		}
	}

	// First signal: stop taking work and let requests in flight finish.
	// Second: abort them; their jobs go back to the queue uncharged.
	runCtx, abort := context.WithCancel(ctx)
	defer abort()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer func() { signal.Stop(sigs); close(sigs) }()
	var stoppedBy atomic.Value // why the run was stopped early, if it was
	go func() {
		n := 0
		for sig := range sigs {
			n++
			if n == 1 {
				stopSignal.Store(true)
				fmt.Fprintln(logOut, "exitgate: stopping: finishing requests in flight (signal again to abort them; nothing is lost either way)")
				stoppedBy.CompareAndSwap(nil, "stopped by "+sig.String())
				engine.Stop()
				continue
			}
			abort()
		}
	}()
	if f.duration > 0 {
		// The duration is the run's deadline: no request starts after
		// it, and those in flight get durationGrace to finish (a slow
		// body could hold the run for all of --timeout, the progress
		// line counting on), then are aborted and stay queued.
		grace := min(durationGrace, f.timeout)
		t := time.AfterFunc(f.duration, func() {
			if !stoppedBy.CompareAndSwap(nil, "stopped after --duration "+f.duration.String()) {
				return // a signal stopped it first
			}
			fmt.Fprintf(logOut, "exitgate: --duration %s reached: stopping; requests in flight get %s to finish, then are aborted (nothing is lost: they stay queued)\n", f.duration, grace)
			engine.Stop()
			time.AfterFunc(grace, abort)
		})
		defer t.Stop()
	}
	prog := startProgress(stderr, logOut, f.progress, fr, tally, core.Waiting)
	stopSaving := make(chan struct{})
	// The run's summary is checkpointed as it goes: after a kill -9 the
	// next run's summary.json holds this one's counts per host and exit up
	// to the last checkpoint (it held only the runs that ended).
	runSummary := func(ctx context.Context) (report.Summary, error) {
		counts, err := fr.Counts(ctx)
		hostCaps, exitCaps := capacities(lim.Snapshot(time.Now()))
		sum := report.Summarize(counts, tally.Snapshot(time.Now()), hostCaps, exitCaps)
		sum.Events = mon.Events()
		return sum, err
	}
	var runPath string
	checkpoint := func() {
		sum, err := runSummary(context.WithoutCancel(ctx)) // (a signal ends the run; its last checkpoint still counts)
		if err == nil && runPath == "" {
			runPath, err = report.RunPath(f.out, sum)
		}
		if err == nil {
			err = report.CheckpointRun(runPath, sum)
		}
		if err != nil {
			fmt.Fprintf(logOut, "exitgate: checkpointing this run's summary: %v\n", err)
		}
	}
	saved := keepSavingLearned(f.out, lim, stopSaving, logOut, checkpoint)
	monCtx, stopMon := context.WithCancel(ctx)
	monDone := make(chan error, 1)
	go func() { monDone <- mon.Run(monCtx) }()
	runErr := engine.Run(runCtx)
	if err := dist.refusal(); err != nil && runErr == nil {
		// Back after its membership lapsed, to workers that now run the
		// crawl otherwise: stopped, its jobs handed back (exit 1: work was
		// done, unlike a refusal at the start).
		runErr = fmt.Errorf("stopped: %w", err)
	}
	close(stopSaving)
	<-saved
	stopMon()
	<-monDone
	prog.stop()

	// The report is written even after an error or a signal: it describes
	// the frontier as it is.
	wctx := context.WithoutCancel(ctx)
	if err := results.Close(wctx, fr); err != nil && runErr == nil {
		runErr = err
	}
	mon.Tick(wctx, time.Now()) // the dashboard's and the summary's last word
	sum, err := runSummary(wctx)
	if err != nil && runErr == nil {
		runErr = err
	}
	if runPath == "" {
		runPath, err = report.RunPath(f.out, sum)
	}
	if err == nil {
		_, err = report.WriteSummaryAt(f.out, runPath, sum)
	}
	if err != nil {
		// Said whatever else failed: after a full disk stopped the crawl,
		// the summary went unwritten without a word, and with it this run's
		// share of the totals.
		fmt.Fprintf(stderr, "exitgate: summary not written, this run's counts are not in %s: %v\n", filepath.Join(f.out, "summary.json"), err)
		if runErr == nil {
			runErr = err
		}
	}
	report.WriteTable(stdout, sum)
	if errors.Is(runErr, redisfr.ErrCrawlGone) {
		// Nothing to resume: the same command seeds the crawl anew.
		fmt.Fprintf(stdout, "\nThe crawl's queue is gone from Redis: what this worker did is in %s; running the same command seeds the crawl again from its URL list and fetches again what was done (lists added with --append must be added again).\n", f.out)
	} else if sum.Queued+sum.Parked > 0 {
		fmt.Fprintf(stdout, "\n%d URLs still to do (%d parked). Run the same command again to resume.\n", sum.Queued+sum.Parked, sum.Parked)
	}
	if sum.Parked > 0 {
		// Which hosts wait and until when, whatever else is left (a run
		// stopped by --duration with URLs queued and parked said nothing
		// of the parked ones); when to come back, when they are all.
		writeParked(wctx, stdout, fr, core.Waiting(time.Now()), sum.Queued == 0)
	}
	fmt.Fprintf(stdout, "Results: %s\n", filepath.Join(f.out, setup.format.File()))
	if dist != nil {
		req := tally.Snapshot(time.Now()).Total.Requests
		fmt.Fprintf(stdout, "Redis: %d round trips for %d requests of this worker (%.2f each, heartbeats, refreshes and waits included)\n",
			redisTrips.Load(), req, float64(redisTrips.Load())/float64(max(req, 1)))
	}
	if runErr != nil {
		return runErr
	}
	why, _ := stoppedBy.Load().(string)
	if dist != nil && sum.Queued+sum.Parked == 0 {
		if n, err := dist.partial(wctx, f.crawl); err == nil && n > 0 {
			return partialListError(f.crawl, n) // not done: part of a list never went in
		}
	}
	return crawlOutcome(sum, why)
}

// crawlOutcome is the error, and with it the exit code, of a crawl that ran
// without failing: nil when every URL is done; exitUnfinished when URLs are
// left to do (why says what stopped the run early, if anything did);
// exitAbandoned when the rest is done but some URLs were abandoned.
func crawlOutcome(sum report.Summary, why string) error {
	switch left := sum.Queued + sum.Parked; {
	case left > 0:
		if why == "" {
			why = fmt.Sprintf("%d parked until later", sum.Parked)
		}
		return &exitError{code: exitUnfinished, err: fmt.Errorf("unfinished: %d of %d URLs still to do (%s); run the same command again to resume", left, sum.URLs, why)}
	case sum.Abandoned > 0:
		return &exitError{code: exitAbandoned, err: fmt.Errorf("%d of %d URLs abandoned (reasons in summary.json, URLs in results.jsonl)", sum.Abandoned, sum.URLs)}
	}
	return nil
}

// listenMetrics takes the metrics address before any work starts, so that a
// bad or busy address is refused before the frontier is even created.
func listenMetrics(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	return ln, nil
}

// serveMetrics serves reg's metrics at /metrics on ln until the returned
// function is called.
func serveMetrics(ln net.Listener, reg *prometheus.Registry, stderr io.Writer) func() {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	stop := serve(ln, mux, "metrics", stderr)
	fmt.Fprintf(stderr, "metrics at http://%s/metrics\n", ln.Addr())
	return stop
}

// capacities reads what the limiter learned: per host, its governing rate
// (the host rate when host-scoped, else the sum of its lanes); per exit, the
// sum of its lanes' rates over all hosts. Throttled time comes along: a
// host's cooldowns and pauses, an exit's lanes' cooldowns, as far as they
// have run by the snapshot. The limiter counts a cooldown or pause in full
// when it is imposed; the part still ahead (a Retry-After of hours imposed a
// second before the end) did not cost this run anything.
func capacities(s limit.Snapshot) (hosts, exits map[string]report.Capacity) {
	hosts = map[string]report.Capacity{}
	exits = map[string]report.Capacity{}
	ahead := func(until time.Time) float64 { return max(until.Sub(s.At).Seconds(), 0) }
	for _, h := range s.Hosts {
		var sum float64
		throttled := float64(h.Counters.ThrottledNs)/1e9 - ahead(h.PausedUntil)
		// The host's pauses (its ThrottledNs beyond its lanes'
		// cooldowns) held every lane: each exit is charged its share, so
		// that the exits add up to the host (they showed 0 s throttled at
		// 100% 429s when the host paused instead).
		pauses := float64(h.Counters.ThrottledNs)/1e9 - ahead(h.PausedUntil)
		for _, l := range h.Lanes {
			pauses -= l.ThrottledSeconds
		}
		pauses = max(pauses, 0)
		// A host that answered nothing (every request a transport error,
		// or a refusal) learned nothing: its lanes' first guesses are no
		// capacity (an exit of a gateway over 8,000 such hosts read
		// 776,194/s learned).
		learned := h.Counters.OK+h.Counters.Throttled+h.Counters.Busy > 0
		for _, l := range h.Lanes {
			rate := l.Rate.Hz()
			if !learned {
				rate = 0
			}
			if !h.Rate.IsZero() {
				// Limited site-wide: the host rate is what the lanes
				// share; their own rates sit unused at the ceiling (each
				// exit read 1,000/s learned, 50/s a lane on 20 hosts).
				rate = min(rate, h.Rate.Hz()/float64(len(h.Lanes)))
			}
			sum += rate
			c := exits[l.Exit]
			c.PerSecond += rate
			c.Throttled += max(l.ThrottledSeconds-ahead(l.CooldownUntil), 0) + pauses/float64(len(h.Lanes))
			exits[l.Exit] = c
			throttled -= ahead(l.CooldownUntil)
		}
		if !h.Rate.IsZero() {
			sum = h.Rate.Hz()
		}
		hosts[h.Host] = report.Capacity{PerSecond: sum, Scope: h.Scope.String(), Throttled: max(throttled, 0),
			Phase: h.Phase, Changes: h.Changes}
	}
	for _, x := range s.Exits {
		if x.Healthy || x.Failures == 0 {
			continue
		}
		c := exits[x.ID]
		c.Failing = fmt.Sprintf("%d proxy failures in a row", x.Failures)
		if x.QuarantinedUntil.After(s.At) {
			c.Failing += ", held back until " + clockOrDate(x.QuarantinedUntil, s.At)
		}
		exits[x.ID] = c
	}
	return hosts, exits
}

// parseSize reads a byte count: a whole number, optionally followed by B,
// KiB, MiB, GiB (powers of 1024) or KB, MB, GB (powers of 1000). It must be
// at least 1.
func parseSize(s string) (int64, error) {
	num := strings.TrimRightFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	unit := strings.TrimSpace(s[len(num):])
	mult := map[string]int64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 1e3, "MB": 1e6, "GB": 1e9}[unit]
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	switch {
	case err != nil || mult == 0:
		return 0, fmt.Errorf("%q is not a size (want bytes, or a number with KiB, MiB, GiB, KB, MB or GB)", s)
	case n < 1:
		return 0, fmt.Errorf("%q: want at least 1 byte", s)
	case n > math.MaxInt64/mult:
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * mult, nil
}

// writeParked says, when only parked URLs are left, why they wait and when
// the first is due, so that the user knows when to run the crawl again.
func writeParked(ctx context.Context, w io.Writer, fr frontier.Frontier, waiting []fetch.HostWait, due bool) {
	now := time.Now()
	for i, hw := range waiting {
		if i == maxParkedShown {
			fmt.Fprintf(w, "... and %d more hosts parked.\n", len(waiting)-i)
			break
		}
		why := ""
		if hw.Why != "" {
			why = " (" + hw.Why + ")"
		}
		fmt.Fprintf(w, "Host %s must wait until %s%s, beyond --max-wait: its URLs are parked.\n", hw.Host, hw.Until.Format(time.RFC3339), why)
	}
	if !due {
		return // with URLs still queued, the frontier's next due time is theirs
	}
	ready, err := fr.Ready(ctx, now, 1)
	if err != nil || ready.Next.IsZero() {
		return
	}
	fmt.Fprintf(w, "The first parked URL is due at %s (in %s): run the same command again then.\n",
		ready.Next.Format(time.RFC3339), ready.Next.Sub(now).Round(time.Second))
}

// maxParkedShown bounds the parked hosts the end report names (each was
// named, a line a host).
const maxParkedShown = 10

// resultRow is the results row of a job that finished in this run: what the
// frontier recorded, and what the answer said (final URL, time, headers) and
// the exit of an abandoned job's last attempt, which the frontier does not
// keep.
func resultRow(fin fetch.Finished, dir string) report.Result {
	j := fin.Job
	j.State, j.Status, j.Reason, j.Result = frontier.Done, fin.Status, fin.Reason, fin.Result
	if fin.Outcome != "done" {
		j.State = frontier.Abandoned
	}
	j.Attempts++ // the frontier charged the final attempt
	r := report.ResultOf(j, dir)
	r.AddResponse(fin.URL, fin.At, fin.Header)
	if j.State == frontier.Abandoned {
		r.Exit = fin.Exit
	}
	return r
}

// crawlRecordFile, in the output directory, names the URL lists that fed
// its frontier.
const crawlRecordFile = "crawl.json"

// crawlRecord is DIR/crawl.json: the URL lists a crawl was fed from, so that
// another list is not mixed into it by mistake.
type crawlRecord struct {
	URLFiles []urlFileRecord `json:"url_files"`
	// Distributed names the distributed crawl (--crawl) whose worker
	// writes here: its URL lists are recorded in Redis, for every worker.
	Distributed string `json:"distributed,omitempty"`
}

type urlFileRecord struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"` // of the file's bytes
	// Lines is urlfile.Identity.Lines: the same URL lines in any order or
	// line ends are the same list; an edited list is another. Empty in
	// the records of older crawls, which SHA256 alone identifies.
	Lines string    `json:"lines,omitempty"`
	Added time.Time `json:"added"`
}

func (u urlFileRecord) identity() urlfile.Identity {
	return urlfile.Identity{File: u.SHA256, Lines: u.Lines}
}

// checkURLFile refuses a URL list that out's crawl was not fed from, unless
// appendOK: running the same command again resumes, a new list needs
// --append (or another --out). It returns the record to write once the list
// is in the frontier, or nil when there is nothing new to record. An out
// directory without a record (a new crawl, or one from an older exitgate)
// takes the list as its own.
func checkURLFile(out, urlFile string, appendOK bool) (*crawlRecord, error) {
	id, err := urlfile.Identify(urlFile)
	if err != nil {
		return nil, err
	}
	this := urlFileRecord{Path: urlFile, SHA256: id.File, Lines: id.Lines, Added: time.Now().UTC()}
	if abs, err := filepath.Abs(urlFile); err == nil {
		this.Path = abs
	}
	var rec crawlRecord
	path := filepath.Join(out, crawlRecordFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &crawlRecord{URLFiles: []urlFileRecord{this}}, nil
	case err != nil:
		return nil, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if rec.Distributed != "" {
		return nil, fmt.Errorf("%s holds a worker's part of the distributed crawl %q: use another --out", out, rec.Distributed)
	}
	for i, u := range rec.URLFiles {
		if u.identity().Same(id) {
			if u.Lines == "" {
				// An older crawl's record: its lines' identity from now on.
				rec.URLFiles[i].Lines = id.Lines
				return &rec, nil
			}
			return nil, nil
		}
	}
	if !appendOK {
		// Every list it was fed from (after --append it named the last
		// only).
		last := "another list"
		if n := len(rec.URLFiles); n > 0 {
			paths := make([]string, n)
			for i, u := range rec.URLFiles {
				paths[i] = u.Path
			}
			last = strings.Join(paths, " and ")
		}
		return nil, fmt.Errorf("%s holds the crawl of %s; %s holds other URLs (another list, or that list edited; the same URLs in another order or with other line ends are the same list): "+
			"run with --append to add its URLs to that crawl, or use another --out", out, last, urlFile)
	}
	rec.URLFiles = append(rec.URLFiles, this)
	return &rec, nil
}

// stdinList is the URLFILE that means standard input.
const stdinList = "-"

// keepStdinList copies the URL list r (standard input) into out as
// urls-stdin-<first 12 hex digits of its SHA-256>.txt and returns the
// path: the same list given again is the same file, and resumes. created
// says the file was not there before.
func keepStdinList(out string, r io.Reader) (path string, created bool, err error) {
	tmp, err := os.CreateTemp(out, ".urls-stdin-*")
	if err != nil {
		return "", false, err
	}
	defer os.Remove(tmp.Name()) // (gone once renamed)
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), r); err != nil {
		tmp.Close()
		return "", false, fmt.Errorf("reading the URL list from standard input: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", false, err
	}
	path = filepath.Join(out, "urls-stdin-"+hex.EncodeToString(h.Sum(nil))[:12]+".txt")
	_, statErr := os.Stat(path)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", false, err
	}
	return path, errors.Is(statErr, fs.ErrNotExist), nil
}

// parseLogLevel reads --log-level.
func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// leaseTTL is the frontier's visibility timeout the engine plans with.
func leaseTTL(d *distributed) time.Duration {
	if d != nil {
		return d.leaseTTL
	}
	return 0 // the default
}

// engineFrontier is the frontier the engine claims from: in distributed
// mode, nothing while this worker owns no exit.
func engineFrontier(fr frontier.Frontier, d *distributed) frontier.Frontier {
	if d == nil {
		return fr
	}
	return gated{Frontier: fr, d: d}
}
