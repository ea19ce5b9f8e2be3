package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/exitgate/exitgate/ca"
	"github.com/exitgate/exitgate/fleet"
	"github.com/exitgate/exitgate/frontier"
	redisfr "github.com/exitgate/exitgate/frontier/redis"
	"github.com/exitgate/exitgate/gateway"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/pool"
	"github.com/exitgate/exitgate/report"
)

type serveFlags struct {
	exitFlags
	listen       string
	auth         string
	noIntercept  bool
	caDir        string
	connectPorts []int
	allowPrivate bool
	wait         time.Duration
	waitCap      time.Duration
	timeout      time.Duration
	drain        time.Duration
	out          string
	progress     time.Duration
	fleetFlags   // distributed mode: --redis, --crawl, --worker-id, --fleet-ttl
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Run a local forward proxy that makes any scraper rate-limit-aware",
		Long: `serve runs an HTTP forward proxy (127.0.0.1:8899 by default) that sends each
request through the exits of a proxy pool under the same limiter as crawl: one
learned budget per (host, exit) lane, a polite ceiling per host. Point any
scraper at it (curl -x, Python requests, Scrapy, Playwright): throttled, banned
and proxy-failed requests of idempotent methods go again through another exit
within a wait budget, and past it the client gets a 429 with Retry-After.

HTTPS: CONNECT tunnels are intercepted with a local CA made on first run (in
--ca-dir; see exitgate ca), so each request inside is limited too; clients must
trust its certificate (exitgate ca export). --no-intercept passes tunnels
through instead: one lane per tunnel, and no status is seen.

Control headers, removed before the server sees the request:
  X-Exitgate-Wait: 30s      this request's wait budget (default --wait)
  X-Exitgate-Session: ID    a sticky session: the same exit for every request
                            (or the proxy user name session-ID)
Answers carry X-Exitgate-Exit and X-Exitgate-Attempts; answers the gateway
makes itself carry X-Exitgate-Reason.

Security: loopback only, unless --auth sets the credentials clients must send
(Proxy-Authorization); CONNECT to ports 443 and 80 only (--connect-ports);
private, loopback and link-local targets refused (--allow-private); requests
that would loop back to the gateway refused. Credentials are never logged.

Distributed mode (--redis URL --crawl NAME): gateways started with the same
--redis, --crawl and exit list split the exits evenly among them, each sending
only through its own and learning the hosts its clients ask for, and keep each
host's --host-rate together; a stopped gateway's exits go to the others (within
--fleet-ttl when it dies). A gateway that owns no exit (more gateways than
exits) answers 503 at once. A fleet of gateways is not a crawl's: give a crawl's
workers another name. exitgate status --redis URL --crawl NAME shows the fleet.

Outputs, in --out, when it stops: summary.json and runs/ (as crawl's, with one
"URL" per client request), learned.json (what the limiter learned, saved every
30 s and restored on the next start). SIGINT or SIGTERM stops taking clients
and lets the requests in flight finish (up to --drain); a second signal stops
at once. Exit status: 0 after a full drain, 1 when requests were cut (or on an
error), 2 for bad flags.`,
		Example: `  exitgate serve --proxies proxies.txt
  curl -x http://127.0.0.1:8899 --cacert "$(exitgate ca path)" https://example.com/
  exitgate serve --proxies proxies.txt --listen 0.0.0.0:8899 --auth scraper:S3cret
  exitgate serve -x socks5://u:p@proxy1:1080 -x http://proxy2:8080 --no-intercept --host-rate 5/s
  exitgate serve --proxies proxies.txt --redis redis://10.0.0.5:6379 --crawl shop   # on each machine`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.NoArgs(cmd, args); err != nil {
				return usageError(err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.config != "" {
				if err := applyConfigFile(cmd.Flags(), f.config); err != nil {
					return usageError(err)
				}
			}
			if err := needs(cmd.Flags(), [2]string{"sessions", "proxy-template"}, [2]string{"fleet-ttl", "redis"},
				[2]string{"worker-id", "redis"}, [2]string{"crawl", "redis"}); err != nil {
				return usageError(err)
			}
			if err := f.settleVerbose(cmd.Flags()); err != nil {
				return usageError(err)
			}
			if f.noIntercept && cmd.Flags().Changed("ca-dir") {
				return usageError(errors.New("--ca-dir does nothing with --no-intercept: no CA is used"))
			}
			return runServe(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	f.exitFlags.register(fl)
	// A gateway multiplexes many clients: more in flight than one crawl.
	setIntDefault(fl, "concurrency", 256)
	setIntDefault(fl, "per-host-concurrency", 64)
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8899", "`ADDR`ess to serve on; anything but loopback needs --auth")
	fl.StringVar(&f.auth, "auth", "", "`USER:PASSWORD` clients must send (Proxy-Authorization: Basic); the user name USER-session-ID asks for a sticky session")
	fl.BoolVar(&f.noIntercept, "no-intercept", false, "pass CONNECT tunnels through instead of intercepting them with the CA: one lane per tunnel, no status seen")
	fl.StringVar(&f.caDir, "ca-dir", "", "`DIR`ectory of the CA (made on first run); default $XDG_CONFIG_HOME/exitgate/ca or ~/.config/exitgate/ca")
	fl.IntSliceVar(&f.connectPorts, "connect-ports", gateway.DefaultConnectPorts(), "`PORTS` CONNECT may reach, comma-separated")
	fl.BoolVar(&f.allowPrivate, "allow-private", false, "let requests reach loopback, private and link-local addresses (the gateway's own address stays refused)")
	fl.DurationVar(&f.wait, "wait", gateway.DefaultWaitBudget, "how long a request may wait for a lane, retries included, unless it sends X-Exitgate-Wait (0: not at all)")
	fl.DurationVar(&f.waitCap, "wait-cap", gateway.DefaultMaxWaitBudget, "the longest X-Exitgate-Wait a client may ask for")
	fl.DurationVar(&f.timeout, "timeout", gateway.DefaultHeaderTimeout, "how long one attempt may wait for the server's answer headers (bodies are never cut)")
	fl.DurationVar(&f.drain, "drain", 30*time.Second, "how long a first SIGINT/SIGTERM lets requests in flight finish")
	fl.StringVar(&f.out, "out", "./exitgate-serve", "output `DIR`ectory: summary.json, runs/, learned.json")
	fl.DurationVar(&f.progress, "progress", time.Minute, "interval of a log line with what was served (0: none)")
	f.fleetFlags.register(fl, "the exits' split and the host state shared by every gateway started with the same --crawl",
		"the fleet's `NAME`; gateways given the same --redis and --crawl split the pool's exits among them and keep each host's --host-rate together (a crawl's workers take another name)")
	setDefaultText(fl, "ca-dir", "~/.config/exitgate/ca")
	setDefaultText(fl, "connect-ports", "443,80")
	return cmd
}

// setIntDefault changes the default of an int flag already registered.
func setIntDefault(fl *pflag.FlagSet, name string, v int) {
	f := fl.Lookup(name)
	f.Value.Set(strconv.Itoa(v))
	f.DefValue = strconv.Itoa(v)
}

// serveSetup is everything built from serve's flags before anything starts.
type serveSetup struct {
	exits  []pool.Exit
	limCfg limit.Config
	gw     gateway.Config
}

func buildServe(f serveFlags) (serveSetup, error) {
	var s serveSetup
	var err error
	if s.limCfg, err = f.limitConfig(); err != nil {
		return s, err
	}
	if err := checkDurations([]durationFlag{{"--wait", f.wait, true, 0}, {"--wait-cap", f.waitCap, false, 0}, {"--timeout", f.timeout, false, 0},
		{"--drain", f.drain, true, 0}, {"--progress", f.progress, true, minProgress}}); err != nil {
		return s, err
	}
	if err := f.fleetFlags.check(f.exitFlags); err != nil {
		return s, err
	}
	if f.wait > f.waitCap {
		return s, fmt.Errorf("--wait %v is above --wait-cap %v", f.wait, f.waitCap)
	}
	var auth *gateway.Credentials
	if f.auth != "" {
		user, pass, ok := strings.Cut(f.auth, ":")
		if !ok || user == "" || pass == "" {
			return s, errors.New("--auth: want USER:PASSWORD, both non-empty") // never the value: it is a secret
		}
		auth = &gateway.Credentials{User: user, Password: pass}
	}
	if err := gateway.CheckListen(f.listen, auth != nil); errors.Is(err, gateway.ErrOpenBind) {
		return s, fmt.Errorf("--listen %s: %w; set --auth USER:PASSWORD (or EXITGATE_SERVE_AUTH) so that only your clients can use it", f.listen, err)
	} else if err != nil {
		return s, fmt.Errorf("--listen %s: %w (want HOST:PORT, e.g. 127.0.0.1:8899)", f.listen, err)
	}
	for _, p := range f.connectPorts {
		if p < 1 || p > 65535 {
			return s, fmt.Errorf("--connect-ports: %d is not a port (1 to 65535)", p)
		}
	}
	if s.exits, err = f.exits(); err != nil {
		return s, err
	}
	wait := f.wait
	if wait == 0 {
		wait = -1 // the flag's 0 means no wait; the struct's 0 means the default
	}
	s.gw = gateway.Config{
		Auth: auth, ConnectPorts: f.connectPorts, AllowPrivate: f.allowPrivate,
		WaitBudget: wait, MaxWaitBudget: f.waitCap, MaxIdleConnsPerHost: f.perHostConcurrency,
		Transport: pool.TransportConfig{ResponseHeaderTimeout: f.timeout, ProbeTimeout: min(f.timeout, pool.DefaultProbeTimeout)},
	}
	return s, nil
}

func runServe(ctx context.Context, stdout, stderr io.Writer, f serveFlags) error {
	setup, err := buildServe(f)
	if err != nil {
		return usageError(err)
	}
	logger := f.logger(stderr)
	setup.limCfg.Logger = logger
	setup.gw.Logger = logger
	if !f.noIntercept {
		dir := f.caDir
		if dir == "" {
			if dir, err = ca.DefaultDir(); err != nil {
				return err
			}
		}
		authority, created, err := ca.Init(dir)
		if err != nil {
			return err
		}
		if created {
			fmt.Fprintf(stderr, "exitgate: made a CA for HTTPS interception: %s (key %s, mode 0600); clients must trust the certificate (exitgate ca export)\n",
				authority.CertPath(), filepath.Join(dir, ca.KeyFile))
		}
		setup.gw.CA = authority
	}
	var metricsLn net.Listener
	if f.metricsAddr != "" {
		if metricsLn, err = listenMetrics(f.metricsAddr); err != nil {
			return usageError(err)
		}
		defer metricsLn.Close()
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		if metricsLn != nil && samePort(metricsLn.Addr().String(), f.listen) {
			return usageError(fmt.Errorf("--listen %s: --metrics-addr %s took its port: give them different ones", f.listen, f.metricsAddr))
		}
		return usageError(fmt.Errorf("--listen: %w", err))
	}
	defer ln.Close()
	if err := gateway.CheckExits(ctx, ln, setup.exits); err != nil {
		return usageError(err)
	}
	// The fleet before --out: a gateway refused by it, or that cannot
	// reach Redis, leaves nothing behind (it left an empty --out).
	var dist *distributed
	if f.redis != "" {
		if dist, err = openChecked(ctx, f.fleetFlags, setup.exits, fleetSettings(roleGateway, f.fleetFlags, f.hostRate), logger); err != nil {
			return err
		}
		defer dist.close()
		// A crawl's name, its workers gone: its URLs stay in Redis, and a
		// gateway fleet under its name hid them from status.
		if fr, err := redisfr.New(dist.rdb, redisfr.Config{Crawl: f.crawl}); err == nil {
			c, err := fr.Counts(ctx)
			fr.Close()
			if err == nil && c.Total() > 0 {
				return usageError(fmt.Errorf("--crawl %q names a distributed crawl in this Redis (%d URLs): give the gateways a name of their own", f.crawl, c.Total()))
			}
		}
		setup.limCfg.Shared = dist.share
	}
	if err := makeOutDir(f.out); err != nil {
		return usageError(err)
	}
	// One process an --out: two gateways on one wrote over each other's
	// summary.json, runs/ and learned.json.
	release, err := lockOut(f.out)
	if err != nil {
		return usageError(err)
	}
	defer release()
	identity, err := f.identity()
	if err != nil {
		return usageError(err)
	}

	lim, err := limit.New(setup.limCfg)
	if err != nil {
		return err
	}
	restoreLearned(f.out, lim, time.Now(), stderr)
	if dist != nil {
		// The limiter gets the exits this gateway owns, none until it
		// has joined; while exits of its share are on their way (a join,
		// a handover), requests wait for them within their budget.
		dist.lim = lim
		setup.gw.SetExits = dist.onSet
		setup.gw.NoExits = func() (bool, time.Duration) {
			return dist.fleet != nil && dist.fleet.Expecting(), f.fleetTTL
		}
	}
	setup.gw.Identity = identity
	start := time.Now()
	tally := metrics.NewTally(start)
	setup.gw.Limiter, setup.gw.Exits, setup.gw.Tally = lim, setup.exits, tally
	g, err := gateway.New(setup.gw)
	if err != nil {
		return err
	}
	if dist != nil {
		dist.applied = func([]limit.Exit) { g.CloseTunnelsOff() } // a moved exit's tunnels close
	}
	if f.echoURL != "" {
		sayResolved(ctx, stderr, g.ExitSet(), len(setup.exits))
	}
	if metricsLn != nil {
		reg, err := newRegistry(tally, nil, 50, 200) // as crawl's --metrics-exits and --metrics-hosts defaults
		if err == nil {
			err = reg.Register(g.Collector())
		}
		if err != nil {
			return err
		}
		defer serveMetrics(metricsLn, reg, stderr)()
	}

	// A gateway the fleet refuses on its return (another member's list or
	// settings now differ) stops, as a crawl worker does.
	refused := make(chan struct{})
	if dist != nil {
		var once sync.Once
		dist.stop = func() { once.Do(func() { close(refused) }) }
		if err := dist.join(ctx, roleGateway, f.fleetFlags, nil, tally, logger, stderr); err != nil {
			if errors.Is(err, fleet.ErrExitsDiffer) || errors.Is(err, fleet.ErrSettingsDiffer) || errors.Is(err, fleet.ErrIDInUse) {
				return usageError(err) // refused before any client, as a bad flag is
			}
			return err
		}
	}

	// Signals are taken before the address is told: a caller that stops
	// the gateway as soon as it reads the address must get the drain, not
	// the default action that kills the process.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	served := make(chan error, 1)
	go func() { served <- g.Serve(ln) }()
	mode := "HTTPS tunnels passed through (--no-intercept)"
	if setup.gw.CA != nil {
		mode = "HTTPS intercepted with the CA " + setup.gw.CA.CertPath()
	}
	exitWord := "exits"
	if len(setup.exits) == 1 {
		exitWord = "exit"
	}
	share := ""
	if dist != nil {
		share = fmt.Sprintf(" (its share of them: %d, fleet %q)", len(dist.fleet.Owned()), f.crawl)
	}
	fmt.Fprintf(stderr, "exitgate: serving on http://%s through %d %s%s; %s\n", ln.Addr(), len(setup.exits), exitWord, share, mode)
	f.warnDirect(stderr)

	stopSaving := make(chan struct{})
	saved := keepSavingLearned(f.out, lim, stopSaving, stderr, nil)
	var fleetPart func() string // what a fleet member adds to its progress line
	if dist != nil {
		fleetPart = func() string {
			return fmt.Sprintf(", %d of %d exits owned, %d gateways", len(dist.fleet.Owned()), dist.fleet.Exits(), dist.fleet.Workers())
		}
	}
	stopProgress := serveProgress(stderr, g, f.progress, fleetPart)

	var runErr error
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			runErr = err
		}
	case <-refused:
		runErr = dist.refusal()
		fmt.Fprintf(stderr, "exitgate: %v: draining requests in flight (up to %v)\n", runErr, f.drain)
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.drain)
		_ = g.Shutdown(dctx)
		cancel()
		<-served
	case sig := <-sigs:
		fmt.Fprintf(stderr, "exitgate: %v: draining requests in flight (up to %v; signal again to stop at once)\n", sig, f.drain)
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.drain)
		go func() {
			select {
			case <-sigs:
				cancel()
			case <-dctx.Done():
			}
		}()
		switch err := g.Shutdown(dctx); {
		case errors.Is(err, gateway.ErrTunnelsClosed):
			// Every request the gateway saw was answered; tunnels it
			// passes through stay open after their last request as a
			// rule (it had said their clients got no answer, exit 1).
			fmt.Fprintf(stderr, "exitgate: %v at the end of --drain (what a passed-through tunnel carries cannot be seen)\n", err)
		case err != nil:
			// Cut short (a second signal, or --drain ran out): the
			// clients of those requests got no answer, which the exit
			// code says to whatever stopped the gateway.
			why := "a second signal"
			if errors.Is(err, context.DeadlineExceeded) {
				why = fmt.Sprintf("--drain %v ran out", f.drain)
			}
			runErr = fmt.Errorf("stopped with requests still in flight (%s): their clients got no answer", why)
		}
		cancel()
		<-served
	}
	stopProgress()
	if dist != nil {
		// Out of the fleet once its clients are answered: its exits
		// go to the others now, not a --fleet-ttl later.
		dist.leave()
	}
	close(stopSaving)
	<-saved
	g.Close()

	st := g.Stats()
	hostCaps, exitCaps := capacities(lim.Snapshot(time.Now()))
	sum := report.Summarize(serveCounts(st), tally.Snapshot(time.Now()), hostCaps, exitCaps)
	if _, err := report.WriteSummary(f.out, sum); err != nil && runErr == nil {
		runErr = err
	}
	report.WriteTable(stdout, sum)
	fmt.Fprintf(stdout, "Gateway: %d requests, %d done, %d retried through another exit, %d answered 429 by the gateway (wait budget spent), %d tunnels (%d passed through)\n",
		st.Requests, st.Done, st.Retries, st.BudgetSpent, st.Tunnels, st.Passthrough)
	if dist != nil {
		req := tally.Snapshot(time.Now()).Total.Requests
		fmt.Fprintf(stdout, "Redis: %d round trips for %d requests this gateway sent (%.2f each, heartbeats and refreshes included)\n",
			redisTrips.Load(), req, float64(redisTrips.Load())/float64(max(req, 1)))
	}
	fmt.Fprintf(stdout, "Summary: %s\n", filepath.Join(f.out, "summary.json"))
	return runErr
}

// serveCounts presents the gateway's clients' requests as a crawl's URLs:
// done, or "abandoned" with why (the server's status passed on, the wait
// budget spent, a refusal), so that summary.json reads the same.
func serveCounts(st gateway.Stats) frontier.Counts {
	c := frontier.Counts{Done: int(st.Done), AbandonedByReason: map[string]int{}}
	for why, n := range st.NotDone {
		c.AbandonedByReason[why] += int(n)
		c.Abandoned += int(n)
	}
	for why, n := range st.Refused {
		c.AbandonedByReason["refused: "+why] += int(n)
		c.Abandoned += int(n)
	}
	return c
}

// serveProgress logs what the gateway served every interval (0: never)
// until the returned function is called; fleet, if set, adds what a
// fleet member owns.
func serveProgress(w io.Writer, g *gateway.Gateway, every time.Duration, fleet func() string) func() {
	if every <= 0 {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				st := g.Stats()
				snap := g.Tally().Snapshot(now)
				owned := ""
				if fleet != nil {
					owned = fleet()
				}
				fmt.Fprintf(w, "%s served %d requests: %d done, %d retried, %d given up (wait budget), 429s from servers %.2f%% (last min %.2f%%) | %d in flight, %d connections, %d sessions%s\n",
					now.Format("15:04:05"), st.Requests, st.Done, st.Retries, st.BudgetSpent, 100*snap.Total.Ratio429(), 100*snap.Rolling429,
					st.InFlight, st.Conns, st.Sessions, owned)
			}
		}
	}()
	return func() { close(stop); <-done }
}

// samePort reports whether two host:port addresses name the same port.
func samePort(a, b string) bool {
	_, pa, errA := net.SplitHostPort(a)
	_, pb, errB := net.SplitHostPort(b)
	return errA == nil && errB == nil && pa == pb
}
