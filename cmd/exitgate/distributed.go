package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/fleet"
	"github.com/exitgate/exitgate/frontier"
	redisfr "github.com/exitgate/exitgate/frontier/redis"
	"github.com/exitgate/exitgate/internal/urlfile"
	"github.com/exitgate/exitgate/limit"
	"github.com/exitgate/exitgate/metrics"
	"github.com/exitgate/exitgate/pool"
	"github.com/exitgate/exitgate/redisstate"
	"github.com/exitgate/exitgate/report"
)

// Distributed mode (--redis, --crawl): the frontier, the fleet of workers
// and the host-level limiter state live in Redis; this file only wires the
// packages that hold them (frontier/redis, fleet, redisstate).

func init() {
	goredis.SetLogger(quietRedisLog{}) // its own dial errors: we report outages once
}

type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

// openRedis connects to the Redis of url (redis://[user:pass@]host:port[/db]);
// a node with cluster mode on is reached as a cluster through it.
func openRedis(ctx context.Context, url string) (goredis.UniversalClient, error) {
	opt, err := goredis.ParseURL(url)
	if err != nil {
		err = fmt.Errorf("--redis %q: %w", redactRedis(url), err)
		if !strings.Contains(url, "://") {
			addr := strings.TrimLeft(strings.TrimPrefix(url, "redis"), ":/") // redis//host:port, //host:port, host:port
			err = fmt.Errorf("%w (did you mean %s?)", err, redactRedis("redis://"+addr))
		}
		return nil, usageError(err) // refused before any work: exit 2
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = time.Second, time.Second, time.Second
	opt.MaxRetries = 1
	c := goredis.NewClient(opt)
	defer func() { c.AddHook(roundTrips{}) }()
	info, err := c.Info(ctx, "cluster").Result()
	if err != nil {
		c.Close()
		if opt.TLSConfig != nil {
			// rediss:// to a Redis that does not speak TLS times out with
			// nothing else said.
			return nil, fmt.Errorf("--redis %s: %w (the URL is rediss://, TLS: is this Redis serving TLS? A plain one takes redis://)", opt.Addr, err)
		}
		return nil, fmt.Errorf("--redis %s: %w", opt.Addr, err)
	}
	if !strings.Contains(info, "cluster_enabled:1") {
		return c, nil
	}
	c.Close()
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{opt.Addr}, Username: opt.Username,
		Password: opt.Password, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		MaxRedirects: 3, TLSConfig: opt.TLSConfig}) // (a cluster behind rediss:// was reached without TLS)
	cc.AddHook(roundTrips{})
	return cc, nil
}

// redisTrips counts the round trips this process made to Redis (a pipeline
// counts once), for the figure printed at the end of a distributed crawl.
var redisTrips atomic.Int64

type roundTrips struct{}

func (roundTrips) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (roundTrips) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		redisTrips.Add(1)
		return next(ctx, cmd)
	}
}

func (roundTrips) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		redisTrips.Add(1)
		return next(ctx, cmds)
	}
}

// distributed is one worker's share of a distributed crawl.
type distributed struct {
	rdb   goredis.UniversalClient
	fr    *redisfr.Store
	share *redisstate.Share
	fleet *fleet.Fleet

	lim *limit.Limiter
	// settings and exitIDs are what the member was checked with
	// (openChecked), and joins with.
	settings map[string]string
	exitIDs  []string
	// applied, if set, is told the exits the limiter got (a gateway
	// closes the tunnels it passes through exits no longer its own).
	applied  func([]limit.Exit)
	leaseTTL time.Duration
	all      atomic.Pointer[[]limit.Exit] // what the ExitSet would give the limiter
	owned    atomic.Pointer[[]string]     // the fleet's share of it
	// since is when each owned exit's previous owner last sent through
	// it, at the latest (limit's Exit.Since): servers still count it.
	sinceMu sync.Mutex
	since   map[string]time.Time
	seen    bool // the fleet has told this worker its share once

	cancel context.CancelFunc
	wg     sync.WaitGroup

	// stop stops the crawl's engine; refused is why, when the fleet
	// refused this worker on its return (fleet.Config.OnRefused).
	stop    func()
	refused atomic.Pointer[error]
}

// refusal is why the fleet refused this worker on its return, or nil; nil
// for a crawl of one process.
func (d *distributed) refusal() error {
	if d == nil {
		return nil
	}
	if err := d.refused.Load(); err != nil {
		return *err
	}
	return nil
}

// fleetFlags are the flags of distributed mode that crawl and serve share:
// its workers and gateways, started with the same --redis and --crawl,
// split the pool's exits and share each host's state.
type fleetFlags struct {
	redis    string // the Redis URL
	crawl    string // the fleet's name
	workerID string
	fleetTTL time.Duration
}

// register adds the flags to fl; holds says what Redis holds, crawlHelp
// what --crawl names, for this command.
func (f *fleetFlags) register(fl *pflag.FlagSet, holds, crawlHelp string) {
	fl.StringVar(&f.redis, "redis", "", "distributed mode: Redis `URL` (redis://host:port; a cluster node reaches the cluster) holding "+holds)
	fl.StringVar(&f.crawl, "crawl", "", "distributed mode: "+crawlHelp)
	fl.DurationVar(&f.fleetTTL, "fleet-ttl", 6*time.Second, "distributed mode: how long a silent member (a crawl's worker, or a gateway) keeps its exits before the others take them over; at least 1s")
	fl.StringVar(&f.workerID, "worker-id", "", "distributed mode: this member's `NAME` in the fleet (default: host name, pid and a random suffix)")
}

// check refuses what a member of a fleet cannot take, before anything is
// written in its --out (a refused run had marked it a worker's, and the
// next run warned that Redis had lost the crawl). ttls are the command's
// other TTL flags, each at least minFleetTTL too.
func (f fleetFlags) check(x exitFlags, ttls ...durationFlag) error {
	if (f.redis == "") != (f.crawl == "") {
		return usageError(errors.New("--redis and --crawl go together"))
	}
	if f.redis == "" {
		return nil
	}
	if err := checkCrawlName(f.crawl); err != nil {
		return usageError(err)
	}
	if x.echoURL != "" || x.exitIPHeader != "" {
		return usageError(fmt.Errorf("--echo-url and --exit-ip-header are not supported with --redis: exits are split among workers by their id"))
	}
	if len(f.workerID) > 100 || strings.ContainsFunc(f.workerID, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		// It is printed in status's table and the fleet's log lines: a
		// newline in it broke both.
		return usageError(fmt.Errorf("--worker-id %.40q: want a name of at most 100 bytes without control characters", f.workerID))
	}
	// Each is renewed a few times within it, a round trip to Redis each:
	// a lease of 1 ms was lost before its request was sent (URLs fetched
	// 27 times), a fleet TTL of 1 ns made 178,000 round trips in 8 s and
	// owned no exit.
	if err := checkDurations(append(ttls, durationFlag{name: "--fleet-ttl", d: f.fleetTTL, least: minFleetTTL})); err != nil {
		return usageError(fmt.Errorf("%w (a dead worker's part moves within it; a live worker renews it a few times within it)", err))
	}
	return nil
}

// minFleetTTL is the shortest --lease-ttl and --fleet-ttl taken.
const minFleetTTL = time.Second

// checkDistributedFlags refuses the flags a distributed crawl worker cannot
// take (fleetFlags.check, and the frontier's).
func checkDistributedFlags(f crawlFlags) error {
	if f.redis != "" && f.durable {
		// It fsyncs the SQLite frontier of a crawl of one process, and
		// did nothing here without a word.
		return usageError(fmt.Errorf("--durable is not supported with --redis: the frontier is Redis's, as durable as its appendfsync setting (everysec by default; always fsyncs each write)"))
	}
	return f.fleetFlags.check(f.exitFlags, durationFlag{name: "--lease-ttl", d: f.leaseTTL, least: minFleetTTL})
}

// openFrontier opens a crawl worker's frontier in its crawl's Redis, with
// its journal in --out. Its flags were checked with the others'
// (buildCrawl, checkDistributedFlags), and the fleet's (fleet.Check).
func (d *distributed) openFrontier(f crawlFlags, logger *slog.Logger) error {
	d.leaseTTL = f.leaseTTL
	var err error
	d.fr, err = redisfr.New(d.rdb, redisfr.Config{Crawl: f.crawl, LeaseTTL: f.leaseTTL, KeepAlive: true,
		Journal: filepath.Join(f.out, "journal-"+f.crawl+".jsonl"), Logger: logger})
	return err
}

// closeFrontier leaves the fleet and closes the frontier (close does the
// rest).
func (d *distributed) closeFrontier() {
	d.leave()
	if d.fr != nil {
		d.fr.Close()
		d.fr = nil
	}
}

// openChecked opens a member's fleet (openFleet) and checks its exit list,
// settings and ID against the live members' (fleet.Check), before the
// member writes anything: a refusal is a usage error. It returns the
// exits' IDs, as the fleet knows them. The caller closes d.
func openChecked(ctx context.Context, f fleetFlags, exits []pool.Exit, settings map[string]string, logger *slog.Logger) (*distributed, error) {
	d, err := openFleet(ctx, f, logger)
	if err != nil {
		return nil, err
	}
	d.settings = settings
	for _, e := range exits {
		d.exitIDs = append(d.exitIDs, e.ID())
	}
	if err := fleet.Check(ctx, d.rdb, fleet.Config{Crawl: f.crawl, ID: f.workerID, TTL: f.fleetTTL, Exits: d.exitIDs, Settings: settings}); err != nil {
		d.close()
		if errors.Is(err, fleet.ErrExitsDiffer) || errors.Is(err, fleet.ErrSettingsDiffer) || errors.Is(err, fleet.ErrIDInUse) {
			return nil, usageError(err)
		}
		return nil, err
	}
	return d, nil
}

// openFleet connects a member of a fleet (a crawl worker or a gateway) to
// its Redis and the host state the fleet shares (redisstate); it joins the
// fleet later (join), once its limiter is made.
func openFleet(ctx context.Context, f fleetFlags, logger *slog.Logger) (*distributed, error) {
	rdb, err := openRedis(ctx, f.redis)
	if err != nil {
		return nil, err
	}
	d := &distributed{rdb: rdb}
	d.owned.Store(&[]string{})
	d.share, err = redisstate.New(rdb, redisstate.Config{Crawl: f.crawl, Logger: logger, Workers: func() int {
		if d.fleet == nil {
			return 1
		}
		return d.fleet.Workers()
	}, Exits: func() int {
		if d.fleet == nil {
			return 0
		}
		return d.fleet.Exits()
	}, Leads: func(host string) bool {
		return d.fleet == nil || d.fleet.Leads(host)
	}})
	if err != nil {
		rdb.Close()
		return nil, err
	}
	return d, nil
}

// redactRedis masks the credentials of a Redis URL for a message: the
// password after a user, or the whole user part (redis://PASSWORD@host
// is how many write a password without a user).
func redactRedis(url string) string {
	start := 0 // a URL without its scheme has its credentials first
	if i := strings.Index(url, "://"); i >= 0 {
		start = i + 3
	}
	rest := url[start:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return url
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		user = ""
	}
	return url[:start] + user + ":xxxxx" + rest[at:]
}

// sharedSettings are the flags every worker of a distributed crawl must
// give alike (fleet.Config.Settings): the fleet's (fleetSettings), robots,
// the retry budget the frontier charges, and its leases' timing.
func sharedSettings(f crawlFlags) map[string]string {
	s := fleetSettings(roleWorker, f.fleetFlags, f.hostRate)
	s["--ignore-robots"] = strconv.FormatBool(f.ignoreRobots)
	s["--user-agent"] = f.userAgent
	s["--max-retries"] = strconv.Itoa(f.maxRetries)
	s["--lease-ttl"] = f.leaseTTL.String()
	return s
}

// fleetSettings are what every member of a fleet must give alike: its
// role (a fleet is of crawl workers or of gateways, never both: they split
// the exits differently, fleet.Config.Even), the politeness ceiling they
// share and the fleet's timing that each reads the others' silence by.
func fleetSettings(role string, f fleetFlags, hostRate string) map[string]string {
	if r, err := limit.ParseRate(hostRate); err == nil && !r.IsZero() {
		// Requests a second, whatever the unit: 120/min and 2/s alike
		// (each written in its own unit, they were refused as two).
		hostRate = strconv.FormatFloat(r.Hz(), 'g', 12, 64) + "/s"
	}
	cmd := "exitgate crawl"
	if role == roleGateway {
		cmd = "exitgate serve"
	}
	return map[string]string{fleet.SettingCommand: cmd, "--host-rate": hostRate, "--fleet-ttl": f.fleetTTL.String()}
}

// listScript records a URL list (ARGV[1], urlfile.Identity.Lines) in the
// crawl's set of lists (KEYS[1]): the first list, the same list again (a
// worker restarted with its command, or a joiner whose copy of the list
// differs in order or line ends; ARGV[3], the file's SHA-256, is how a
// crawl seeded by an older exitgate recorded it), or any list with ARGV[2]
// = "1" (--append) returns 1; another list returns 0, refused.
//
// A list taken is also marked as loading (KEYS[2]) until loaded marks it
// loaded: a worker killed while loading leaves it there.
var listScript = goredis.NewScript(`
if redis.call('SCARD', KEYS[1]) == 0 then
  redis.call('SADD', KEYS[1], ARGV[1])
  redis.call('SADD', KEYS[2], ARGV[1])
  return 2
end
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 or redis.call('SISMEMBER', KEYS[1], ARGV[3]) == 1 or ARGV[2] == '1' then
  redis.call('SADD', KEYS[1], ARGV[1])
  redis.call('SADD', KEYS[2], ARGV[1])
  return 1
end
return 0
`)

// checkList refuses a URL list other than the one(s) the distributed crawl
// was fed from, unless appendOK, as a crawl of one process does with its
// crawl.json: a joiner given another list added its URLs without a word.
// The lists are recorded in Redis, for every worker. It reports whether
// urlFile is the crawl's first list: this worker seeds the crawl.
func (d *distributed) checkList(ctx context.Context, crawl, urlFile string, appendOK bool) (seeds bool, sum string, err error) {
	id, err := urlfile.Identify(urlFile)
	if err != nil {
		return false, "", err
	}
	a := "0"
	if appendOK {
		a = "1"
	}
	ok, err := listScript.Run(ctx, d.rdb, []string{"eg:{" + crawl + "}:lists", "eg:{" + crawl + "}:loading"}, id.Lines, a, id.File).Int()
	if err != nil {
		return false, "", fmt.Errorf("crawl %q: URL lists: %w", crawl, err)
	}
	if ok == 0 {
		return false, "", usageError(fmt.Errorf("crawl %q was fed from other URLs than %s holds (another list, or that list edited; the same URLs in another order or with other line ends are the same list): run with --append to add its URLs to the crawl, or join without a URL file", crawl, urlFile))
	}
	return ok == 2, id.Lines, nil
}

// loaded records that the URL list sum went into the crawl whole: a list
// is recorded before its URLs go in, and a seeder killed while loading left
// part of it, which the other workers crawled and called done.
func (d *distributed) loaded(ctx context.Context, crawl, sum string) error {
	return d.rdb.SRem(ctx, "eg:{"+crawl+"}:loading", sum).Err()
}

// unrecordList takes the URL list sum out of the crawl's lists: it held not
// one usable URL, and a corrected list was refused as another.
func (d *distributed) unrecordList(ctx context.Context, crawl, sum string) error {
	p := d.rdb.Pipeline()
	p.SRem(ctx, "eg:{"+crawl+"}:lists", sum)
	p.SRem(ctx, "eg:{"+crawl+"}:loading", sum)
	_, err := p.Exec(ctx)
	return err
}

// partial counts the crawl's URL lists that a worker began to load and none
// loaded whole.
func (d *distributed) partial(ctx context.Context, crawl string) (int, error) {
	return partialLists(ctx, d.rdb, crawl)
}

func partialLists(ctx context.Context, rdb goredis.UniversalClient, crawl string) (int, error) {
	n, err := rdb.SCard(ctx, "eg:{"+crawl+"}:loading").Result()
	return int(n), err
}

// partialListError says that a list the crawl was given did not go in
// whole (n of them): the crawl is unfinished, whatever its queue says.
func partialListError(crawl string, n int) error {
	return &exitError{code: exitUnfinished, err: fmt.Errorf(
		"crawl %q: %d URL list(s) it was given did not go in whole (the worker loading one stopped, or was killed, while loading): what went in is crawled; run that worker's command again, with its URL file, to load the rest", crawl, n)}
}

// loadingNote says, while the crawl runs, that n of its lists are not in
// whole yet: a worker may be loading one now (a joiner said "did not go in
// whole" of a list its live seeder was still loading).
func loadingNote(crawl string, n int) string {
	return fmt.Sprintf("crawl %q: %d URL list(s) not in whole yet: a worker is loading one now, or one stopped while loading (then run its command again, with its URL file, to load the rest)", crawl, n)
}

// buffer bounds the jobs a worker keeps claimed by the exits it owns
// (perExitBuffer each, at least one exit's): what it holds no other
// worker may take, and a worker on one exit held 128 jobs while workers
// with six sat idle. nil (the Core's default) for a crawl of one process.
func (d *distributed) buffer() func() int {
	if d == nil {
		return nil
	}
	return func() int { return perExitBuffer * max(1, len(*d.owned.Load())) }
}

// perExitBuffer is how many claimed jobs a distributed worker keeps ready
// per exit it owns: seconds of work at the rates per-IP limits allow.
const perExitBuffer = 16

// onSet stands between the ExitSet and the limiter: the limiter gets only
// the exits this worker owns.
func (d *distributed) onSet(exits []limit.Exit) {
	d.all.Store(&exits)
	d.apply()
}

func (d *distributed) apply() {
	all, owned := d.all.Load(), *d.owned.Load()
	if all == nil || d.lim == nil {
		return
	}
	mine := slices.DeleteFunc(slices.Clone(*all), func(e limit.Exit) bool { return !slices.Contains(owned, e.ID) })
	d.sinceMu.Lock()
	for i := range mine {
		mine[i].Since = d.since[mine[i].ID]
	}
	d.sinceMu.Unlock()
	d.lim.SetExits(mine)
	if d.applied != nil {
		d.applied(mine)
	}
}

// gained records, for the exits of owned that this worker did not own
// before, when their previous owner last sent through them at the latest:
// a handover before now (it stopped a handover before letting go). All of
// them but a lone first worker's, which nobody used before it. A lane on
// such an exit sends first an interval after that: at 2/s, when the handover
// has already kept it idle that long, at once.
func (d *distributed) gained(owned []string, workers int, now time.Time) {
	d.sinceMu.Lock()
	defer d.sinceMu.Unlock()
	old := d.owned.Load()
	first := !d.seen
	d.seen = true
	if d.since == nil {
		d.since = map[string]time.Time{}
	}
	for _, id := range owned {
		if old != nil && slices.Contains(*old, id) {
			continue
		}
		if first && workers <= 1 {
			continue
		}
		d.since[id] = now.Add(-fleet.DefaultHandover)
	}
	for id := range d.since {
		if !slices.Contains(owned, id) {
			delete(d.since, id)
		}
	}
}

// The roles of a fleet's members: a fleet is of one or the other
// (fleetSettings).
const (
	roleWorker  = "worker"  // a distributed crawl's: one leader searches every host for all
	roleGateway = "gateway" // serve's: each searches its own hosts (fleet.Config.Even)
)

// join enters the fleet as a member (roleWorker or roleGateway) with the
// settings it was checked with (openChecked) and starts the heartbeat, the
// shared-state refresh and the status reports; close stops them. core is
// a crawl worker's engine, nil for a gateway.
func (d *distributed) join(ctx context.Context, role string, f fleetFlags, core *fetch.Core, tally *metrics.Tally, logger *slog.Logger, stderr io.Writer) error {
	var err error
	d.fleet, err = fleet.Join(ctx, d.rdb, fleet.Config{Crawl: f.crawl, ID: f.workerID, Exits: d.exitIDs, Logger: logger, TTL: f.fleetTTL,
		Settings: d.settings, Even: role == roleGateway,
		Learned: d.lim.Learned, Restore: d.lim.Restore,
		OnRefused: func(err error) {
			d.refused.Store(&err)
			if d.stop != nil {
				d.stop()
			}
		},
		OnExits: func(owned []string, workers int) {
			d.gained(owned, workers, time.Now())
			d.owned.Store(&owned)
			d.apply()
			if len(owned) == 0 && core != nil {
				// Standing by: jobs bought for exits now gone go back.
				_ = core.HandBack(context.Background())
			}
		}})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "exitgate: %s %s of crawl %q: %d of %d exits, %d workers\n",
		role, d.fleet.ID(), f.crawl, len(d.fleet.Owned()), len(d.exitIDs), d.fleet.Workers())
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.cancel = cancel
	d.wg.Go(func() { d.fleet.Run(rctx) })
	d.wg.Go(func() { d.share.Run(rctx) })
	d.wg.Go(func() {
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			_ = d.fleet.Report(rctx, workerReportOf(tally.Snapshot(time.Now()), len(d.fleet.Owned())))
			select {
			case <-rctx.Done():
				// The last word, for the crawl's every-run total.
				lctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_ = d.fleet.Report(lctx, workerReportOf(tally.Snapshot(time.Now()), 0))
				cancel()
				return
			case <-t.C:
			}
		}
	})
	return nil
}

func (d *distributed) close() {
	d.closeFrontier()
	d.rdb.Close()
}

// leave stops the heartbeat, the shared-state refresh and the reports: the
// worker leaves the fleet, its exits free for the others.
func (d *distributed) leave() {
	if d.cancel != nil {
		d.cancel()
	}
	d.wg.Wait()
}

// gated is the frontier the engine sees: a worker that owns no exit claims
// nothing (it stands by until exits come its way).
type gated struct {
	frontier.Frontier
	d *distributed
}

// Unwrap returns the frontier gated (frontier.Wrapper).
func (g gated) Unwrap() frontier.Frontier { return g.Frontier }

func (g gated) Claim(ctx context.Context, now time.Time, max int, hostOK func(string) bool) ([]frontier.Job, error) {
	if len(*g.d.owned.Load()) == 0 {
		return nil, nil
	}
	return g.Frontier.Claim(ctx, now, max, hostOK)
}

func (g gated) ClaimHost(ctx context.Context, host string, now time.Time, max int) ([]frontier.Job, error) {
	if len(*g.d.owned.Load()) == 0 {
		return nil, nil
	}
	return g.Frontier.ClaimHost(ctx, host, now, max)
}

// Holding says why a worker that owns no exit claims nothing
// (fetch.Holder): the engine's stall line names it.
func (g gated) Holding() string {
	if len(*g.d.owned.Load()) == 0 {
		return "this worker owns no exit: it stands by until one comes its way"
	}
	return ""
}

// Ready says to look again within a second when nothing is due later, or
// while this worker stands by: other workers change the frontier (their
// jobs finish, or fail and come back), and exits may come this way,
// without this engine being told. A far parked job keeps its time, so
// that a crawl left with parked jobs alone still ends.
func (g gated) Ready(ctx context.Context, now time.Time, max int) (frontier.Ready, error) {
	r, err := g.Frontier.Ready(ctx, now, max)
	soon := now.Add(time.Second)
	if err == nil && (r.Next.IsZero() || len(*g.d.owned.Load()) == 0 && r.Next.After(soon)) {
		r.Next = soon
	}
	return r, err
}

// workerReport is what each worker publishes for `exitgate status`.
type workerReport struct {
	At        time.Time `json:"at"`
	Exits     int       `json:"exits"`
	Requests  int64     `json:"requests"`
	Successes int64     `json:"successes"`
	Done      int64     `json:"done"`
	Too429    int64     `json:"responses_429"`
	Rate      float64   `json:"ok_per_second"`
	Ratio429  float64   `json:"ratio_429"`
	Last429   float64   `json:"ratio_429_last_minute"`
}

func workerReportOf(s metrics.Snapshot, exits int) workerReport {
	r := workerReport{At: s.At.UTC(), Exits: exits, Requests: s.Total.Requests, Successes: s.Total.Successes,
		Done: s.Total.Done, Too429: s.Total.Throttled429, Last429: s.Rolling429}
	if sec := s.Elapsed().Seconds(); sec > 0 {
		r.Rate = float64(s.Total.Successes) / sec
	}
	if s.Total.Requests > 0 {
		r.Ratio429 = float64(s.Total.Throttled429) / float64(s.Total.Requests)
	}
	return r
}

// The status of a distributed crawl (status --redis URL --crawl NAME).

type statusFlags struct {
	redis, crawl string
	json         bool
}

type crawlStatus struct {
	Crawl   string         `json:"crawl"`
	Workers []workerStatus `json:"workers"`
	// Queue is the crawl's URLs by state; its abandoned leave out the
	// NotFound (404, 410), as summary.json does (--json counted them
	// abandoned where the text said not found).
	Queue    frontier.Counts `json:"queue"`
	NotFound int             `json:"not_found"`
	// ExpiredLeases is how many of Queue's leased jobs are past their
	// lease: a worker that stopped held them, and the next claim from
	// their host takes them back (status showed them leased, as if
	// being fetched).
	ExpiredLeases int                 `json:"expired_leases"`
	Hosts         []limit.LearnedHost `json:"hosts"`
	// Runs adds up the last report of every run of every worker, live
	// or not (the workers' rows are the live ones').
	Runs runsTotal `json:"all_runs"`
	// Gateways says the fleet is of gateways (serve --redis), not a
	// crawl's workers: it has no URLs.
	Gateways bool `json:"gateways,omitempty"`
}

// runsTotal is what every run of every worker sent, by their last reports.
type runsTotal struct {
	Runs     int   `json:"runs"`
	Requests int64 `json:"requests"`
	Too429   int64 `json:"responses_429"`
}

type workerStatus struct {
	ID     string        `json:"id"`
	Exits  []string      `json:"exits"`
	Report *workerReport `json:"report,omitempty"`
}

func runFleetStatus(ctx context.Context, w io.Writer, f statusFlags) error {
	rdb, err := openRedis(ctx, f.redis)
	if err != nil {
		return err
	}
	defer rdb.Close()
	members, err := fleet.Status(ctx, rdb, f.crawl)
	if err != nil {
		return err
	}
	st := crawlStatus{Crawl: f.crawl, Workers: []workerStatus{}, Hosts: []limit.LearnedHost{}} // [] in JSON, not null
	for _, m := range members {
		ws := workerStatus{ID: m.ID, Exits: m.Exits}
		if len(m.Report) > 0 {
			var r workerReport
			if json.Unmarshal(m.Report, &r) == nil {
				ws.Report = &r
			}
		}
		st.Workers = append(st.Workers, ws)
	}
	fr, err := redisfr.New(rdb, redisfr.Config{Crawl: f.crawl})
	if err != nil {
		return err
	}
	defer fr.Close()
	if st.Queue, err = fr.Counts(ctx); err != nil {
		return err
	}
	if st.Queue.Leased > 0 {
		if st.ExpiredLeases, err = fr.ExpiredLeases(ctx, time.Now()); err != nil {
			return err
		}
	}
	if runs, err := fleet.RunReports(ctx, rdb, f.crawl); err == nil {
		for _, raw := range runs {
			var r workerReport
			if json.Unmarshal(raw, &r) == nil {
				st.Runs.Runs++
				st.Runs.Requests += r.Requests
				st.Runs.Too429 += r.Too429
			}
		}
	}
	st.NotFound, st.Queue.AbandonedByReason = report.SplitNotFound(st.Queue.AbandonedByReason)
	st.Queue.Abandoned -= st.NotFound
	learned, err := rdb.HGetAll(ctx, "eg:{"+f.crawl+"}:learned").Result()
	if err != nil {
		return err
	}
	for _, v := range learned {
		var h limit.LearnedHost
		if json.Unmarshal([]byte(v), &h) == nil {
			st.Hosts = append(st.Hosts, h)
		}
	}
	slices.SortFunc(st.Hosts, func(a, b limit.LearnedHost) int { return strings.Compare(a.Host, b.Host) })
	if len(st.Workers) == 0 && st.Queue.Total()+st.NotFound == 0 && len(st.Hosts) == 0 && st.Runs.Runs == 0 {
		// Nothing of it at all: a mistyped name, or a crawl Redis lost.
		return fmt.Errorf("no crawl %q in this Redis: no URLs, no workers, nothing learned (check --crawl)", f.crawl)
	}
	// A fleet of gateways (serve --redis) has members and no URLs: its
	// status read as an empty crawl's, "0 URLs: 0 done ... 0 parked".
	cmdName, _ := rdb.HGet(ctx, "eg:{"+f.crawl+"}:pool", "set:command").Result()
	st.Gateways = cmdName == "exitgate serve" && st.Queue.Total()+st.NotFound == 0 // (a crawl's URLs shown whoever came last)
	if f.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if st.Gateways {
			// No URLs: none of a crawl's zero counts (the text leaves
			// them out too).
			return enc.Encode(struct {
				Crawl    string              `json:"crawl"`
				Gateways bool                `json:"gateways"`
				Members  []workerStatus      `json:"workers"`
				Hosts    []limit.LearnedHost `json:"hosts"`
				Runs     runsTotal           `json:"all_runs"`
			}{st.Crawl, true, st.Workers, st.Hosts, st.Runs})
		}
		return enc.Encode(st)
	}
	c := st.Queue
	// 404s and 410s are no abandoned URLs, here as in each worker's
	// summary (status said 8 abandoned where the workers said 3 not
	// found, 5 abandoned): st.NotFound, out of c's.
	nf := st.NotFound
	leased := strconv.Itoa(c.Leased) + " leased"
	if st.ExpiredLeases > 0 {
		leased += fmt.Sprintf(" (%d past their lease: the worker that held them stopped; claimed again in due order, after the jobs of their host due before their lease ran out)", st.ExpiredLeases)
	}
	member := "worker"
	if st.Gateways {
		member = "gateway"
		fmt.Fprintf(w, "fleet %s of gateways (exitgate serve): %d live\n", f.crawl, len(st.Workers))
	} else {
		fmt.Fprintf(w, "crawl %s: %d URLs: %d done, %d not found, %d abandoned, %d queued, %s, %d parked\n",
			f.crawl, c.Total()+nf, c.Done, nf, c.Abandoned, c.Queued, leased, c.Parked)
	}
	if n, err := partialLists(ctx, rdb, f.crawl); err == nil && n > 0 {
		fmt.Fprintf(w, "note: %s\n", loadingNote(f.crawl, n))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, member+"\texits\trequests\tok/s\t429\t429 last min\texits owned")
	var req, n429 int64
	var rate float64
	for _, ws := range st.Workers {
		r := ws.Report
		if r == nil {
			r = &workerReport{}
		}
		req, n429, rate = req+r.Requests, n429+r.Too429, rate+r.Rate
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.2f%%\t%.2f%%\t%s\n", ws.ID, len(ws.Exits), r.Requests, r.Rate,
			100*ratio(r.Too429, r.Requests), 100*r.Last429, strings.Join(ws.Exits, " "))
	}
	fmt.Fprintf(tw, "all (%d)\t\t%d\t%.2f\t%.2f%%\t\t\n", len(st.Workers), req, rate, 100*ratio(n429, req))
	// Every run, dead and finished workers' too: the live ones' alone
	// fell by a killed worker's requests, and read 0 once all ended.
	fmt.Fprintf(tw, "every run (%d)\t\t%d\t\t%.2f%%\t\t\n", st.Runs.Runs, st.Runs.Requests, 100*ratio(st.Runs.Too429, st.Runs.Requests))
	tw.Flush()
	if len(st.Hosts) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "host\tscope\tphase\tlane rate/s\thost rate/s\tlearned")
		for _, h := range st.Hosts {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.3g\t%.3g\t%s ago\n", h.Host, h.Scope, h.Phase, h.LaneRate, h.HostRate,
				time.Since(h.At).Round(time.Second))
		}
		tw.Flush()
	}
	return nil
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
