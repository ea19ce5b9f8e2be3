package peerbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/internal/peers"
	"github.com/exitgate/exitgate/pool"
	"github.com/exitgate/exitgate/report"
	"github.com/exitgate/exitgate/sim/measure"
	simrun "github.com/exitgate/exitgate/sim/run"
	"github.com/exitgate/exitgate/sim/strategy"
)

// RunConfig is one target crawled with one strategy. The zero value of each
// optional field is its documented default.
type RunConfig struct {
	// Target is the rate limiter; a fresh instance is started for the run.
	// Required (one of Targets).
	Target Target
	// Strategy is the limiter under test. Required.
	Strategy strategy.Spec
	// Exits is the number of tinyproxy exits. Default 10.
	Exits int
	// FirstIP is the first exit's address; the others follow
	// (ExitAddrs). Default DefaultFirstIP.
	FirstIP netip.Addr
	// Duration is how long the crawl runs. Default 120 s.
	Duration time.Duration
	// Dir receives the server's files and access log, the proxies file and
	// the crawl's output. Required.
	Dir string
	// CrawlBinary, when set, is the path of an exitgate binary: the run is
	// then `exitgate crawl --proxies FILE --duration D --ignore-robots
	// URLFILE --out DIR`, default flags otherwise, which exists only for
	// the exitgate strategy. Empty: the engine runs in-process with the
	// strategy's limiter (sim/run.Live).
	CrawlBinary string
	// Workers is how many `exitgate crawl` processes share the run through
	// Redis (the distributed mode; CrawlBinary only). Above 1, the run
	// starts its own redis-server and N workers at once, each `exitgate
	// crawl --redis URL --crawl <target> --proxies FILE --duration D
	// --ignore-robots --out DIR/wK URLFILE` over the same exits and the
	// same URL file (they dedupe it atomically); the server's log measures
	// them together as it measures one. Default 1: one crawl process, no
	// Redis.
	Workers int
	// Seed makes the strategies' random choices repeatable (timing is
	// real, so runs are not). Default 1.
	Seed uint64
	// TargetLead is how long the target has run when the crawl starts (at
	// least: the exits start after it). A limiter whose windows start with
	// its server (httprate) meets the crawl at that point of its window.
	// Zero: as soon as the exits are up.
	TargetLead time.Duration
	// Progress, if set, is called about every ProgressEvery (default 10 s)
	// from a goroutine the run owns, with what the server logged so far.
	Progress      func(Progress)
	ProgressEvery time.Duration
}

// Progress is a running run's state, as its server logged it.
type Progress struct {
	Target, Strategy   string
	Elapsed, Duration  time.Duration
	OK, Limited, Other int
}

// DefaultFirstIP is the first exit address by default.
var DefaultFirstIP = netip.AddrFrom4([4]byte{127, 0, 0, 11})

// Modes of a run.
const (
	ModeEngine      = "engine"
	ModeCrawlBinary = "crawl-binary"
)

// Result is one run, measured from the server's access log.
type Result struct {
	Target   string `json:"target"`
	Strategy string `json:"strategy"`
	// Mode is ModeEngine or ModeCrawlBinary; Command is the crawl's command
	// line in the latter.
	Mode    string   `json:"mode"`
	Command []string `json:"command,omitempty"`
	// Workers is how many crawl processes shared the run (RunConfig.Workers;
	// 1 in the engine and for one crawl binary). With more, Command is the
	// first worker's; the others differ in --out alone.
	Workers int `json:"workers"`
	// DuplicateURLs counts URLs finished twice: lines of a results.jsonl
	// that repeat a URL of the same file, and (workers) rows two workers
	// each finished themselves for one URL (duplicateURLs says how rows are
	// told apart). The frontier, with workers the shared one, hands a URL
	// out once, so anything above 0 is a defect. Counted for the crawl
	// binary only (the engine writes no results file).
	DuplicateURLs int `json:"duplicate_urls"`
	// WorkerRows is how many result rows each worker finished itself, in
	// worker order (workers only): how the crawl was shared out.
	WorkerRows []int `json:"worker_rows,omitempty"`
	Exits      int   `json:"exits"`
	// Rate is the target's sustained limit per exit, in requests per second.
	Rate            float64 `json:"rate_per_exit"`
	DurationSeconds float64 `json:"duration_seconds"`
	URLs            int     `json:"urls"`
	// Seed is the strategy's seed (RunConfig.Seed).
	Seed uint64 `json:"seed"`
	// Start is the start of the measured span: when the engine started, or
	// (crawl binary) the first request the server logged.
	Start time.Time `json:"start"`
	// TargetLead is how long the target had been running when the first
	// request reached it (the exits and the URL set are set up in
	// between): limiters that align windows to their own start (httprate)
	// are that far out of phase with the crawl.
	TargetLead float64 `json:"target_lead_seconds"`
	// Server are the figures from the server's access log over
	// [Start, Start+Duration) (sim/measure).
	Server measure.Figures `json:"server"`
	// ClientCounts and ServerCounts are every response of the run as the
	// client counted it and as the server logged it; Agree says they match
	// per exit and status, Mismatches says where not.
	ClientCounts Counts   `json:"client_counts"`
	ServerCounts Counts   `json:"server_counts"`
	Agree        bool     `json:"client_server_agree"`
	Mismatches   []string `json:"mismatches,omitempty"`
	// The frontier at the end: every URL is done, abandoned, queued or
	// parked. RanDry is true when nothing was left to do (the run then
	// measured a crawl that had stopped, not a limiter).
	Done              int            `json:"done"`
	Abandoned         int            `json:"abandoned"`
	AbandonedByReason map[string]int `json:"abandoned_by_reason,omitempty"`
	Queued            int            `json:"queued"`
	Parked            int            `json:"parked"`
	RanDry            bool           `json:"ran_dry"`
	WallSeconds       float64        `json:"wall_seconds"`
	Dir               string         `json:"dir"`
	// Error is why the run failed; the figures are then empty.
	Error string `json:"error,omitempty"`

	firstHit time.Time // the first request from an exit in the server's log
}

// Accounted reports whether every URL of the set ended in a known state.
func (r Result) Accounted() bool {
	return r.Done+r.Abandoned+r.Queued+r.Parked == r.URLs
}

// Counts are responses by status, per exit address.
type Counts struct {
	Requests        int                    `json:"requests"`
	ByStatus        map[int]int            `json:"by_status"`
	TransportErrors int                    `json:"transport_errors"`
	PerExit         map[string]map[int]int `json:"per_exit_by_status"`
	// errorsPerExit are transport errors by exit address (client only).
	errorsPerExit map[string]int
}

func newCounts() Counts {
	return Counts{ByStatus: map[int]int{}, PerExit: map[string]map[int]int{}, errorsPerExit: map[string]int{}}
}

func (c *Counts) add(exit string, status, n int) {
	if n == 0 {
		return
	}
	c.Requests += n
	if status == 0 {
		c.TransportErrors += n
		c.errorsPerExit[exit] += n
		return
	}
	c.ByStatus[status] += n
	if c.PerExit[exit] == nil {
		c.PerExit[exit] = map[int]int{}
	}
	c.PerExit[exit][status] += n
}

// Responses is the requests that got an answer.
func (c Counts) Responses() int { return c.Requests - c.TransportErrors }

// ErrBinaryStrategy: the crawl binary runs exitgate's own limiter only.
var ErrBinaryStrategy = errors.New("peerbench: the crawl binary runs the exitgate strategy only")

// client is what the crawl reported at its end.
type client struct {
	counts                          Counts
	done, abandoned, queued, parked int
	reasons                         map[string]int
	start                           time.Time // zero: from the server log
	command                         []string
	duplicates                      int   // result lines of a URL already finished (duplicateURLs)
	workerRows                      []int // rows each worker finished itself (workers > 1)
}

// Run starts the target and the exits, crawls for the duration and
// measures the run from the server's access log. Everything it started is
// stopped before it returns.
func Run(ctx context.Context, cfg RunConfig) (Result, error) {
	if cfg.Strategy.New == nil || cfg.Target.start == nil || cfg.Dir == "" {
		return Result{}, errors.New("peerbench: a target, a strategy and a directory are required")
	}
	if cfg.CrawlBinary != "" && cfg.Strategy.Name != strategy.Exitgate {
		return Result{}, fmt.Errorf("%w, not %s", ErrBinaryStrategy, cfg.Strategy.Name)
	}
	if cfg.Exits <= 0 {
		cfg.Exits = 10
	}
	if !cfg.FirstIP.IsValid() {
		cfg.FirstIP = DefaultFirstIP
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 120 * time.Second
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.Workers > 1 && cfg.CrawlBinary == "" {
		return Result{}, fmt.Errorf("peerbench: %d workers need the crawl binary: the in-process engine is one process", cfg.Workers)
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 10 * time.Second
	}
	res := Result{Target: cfg.Target.Name, Strategy: cfg.Strategy.Name, Mode: ModeEngine, Exits: cfg.Exits,
		Rate: cfg.Target.Rate, DurationSeconds: cfg.Duration.Seconds(), URLs: urlCount(cfg.Target, cfg.Strategy, cfg.Exits, cfg.Duration), Seed: cfg.Seed, Dir: cfg.Dir, Workers: cfg.Workers}
	if cfg.CrawlBinary != "" {
		res.Mode = ModeCrawlBinary
	}
	wall := time.Now()
	// The run's directory is this run's alone: a server appends to an
	// access log it finds (a second run into the same --out measured both
	// runs' requests together) and a crawl resumes a frontier it finds.
	if err := os.RemoveAll(cfg.Dir); err != nil {
		return res, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return res, err
	}
	addrs, err := ExitAddrs(cfg.FirstIP, cfg.Exits)
	if err != nil {
		return res, err
	}
	srvStart := time.Now()
	srv, err := cfg.Target.Start(filepath.Join(cfg.Dir, "server"))
	if err != nil {
		return res, err
	}
	defer srv.Close()
	exits, err := StartExits(addrs, cfg.Dir)
	if err != nil {
		return res, err
	}
	defer exits.Close()
	if wait := cfg.TargetLead - time.Since(srvStart); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}

	stopProgress := watch(cfg, srv.AccessLogPath())
	var c client
	if cfg.CrawlBinary != "" {
		c, err = crawlBinary(ctx, cfg, srv.URL(), exits, res.URLs)
	} else {
		c, err = crawlEngine(ctx, cfg, srv.URL(), exits, res.URLs)
	}
	stopProgress()
	if err == nil {
		err = alive(srv)
	}
	if err != nil {
		return res, fmt.Errorf("%s × %s: %w\n%s", cfg.Target.Name, cfg.Strategy.Name, err, srv.Tail())
	}
	res.Command = c.command
	res.DuplicateURLs, res.WorkerRows = c.duplicates, c.workerRows
	res.ClientCounts = c.counts
	res.Done, res.Abandoned, res.Queued, res.Parked = c.done, c.abandoned, c.queued, c.parked
	res.AbandonedByReason = c.reasons
	res.RanDry = c.queued+c.parked == 0

	log, err := serverLog(ctx, srv, c.counts.Responses())
	if err != nil {
		return res, err
	}
	if err := res.judge(log, exits.Bind, c.start, cfg); err != nil {
		return res, fmt.Errorf("%s × %s: %w", cfg.Target.Name, cfg.Strategy.Name, err)
	}
	res.TargetLead = res.firstHit.Sub(srvStart).Seconds()
	res.WallSeconds = time.Since(wall).Seconds()
	return res, nil
}

// maxRequestRate bounds how fast a strategy that ignores 429s can be
// answered through tinyproxy on loopback (about 1,200 requests/s were
// seen): what sizes the URLs a strategy may abandon.
const maxRequestRate = 4000

// urlCount is more URLs than the strategy can finish in d: twice what the
// target allows the exits (plus each exit's first window and burst), plus
// what it could abandon if every request at maxRequestRate drew a 429 and
// each URL were dropped after its 429 budget.
func urlCount(t Target, s strategy.Spec, exits int, d time.Duration) int {
	allowed := t.Rate*float64(exits)*d.Seconds() + float64(exits*(t.Limit+t.Burst))
	budget := s.Retry.MaxThrottled
	if budget <= 0 {
		budget = fetch.DefaultMaxThrottled
	}
	abandoned := maxRequestRate * d.Seconds() / float64(budget)
	return 2*int(math.Ceil(allowed)) + int(math.Ceil(abandoned)) + 100
}

// watch reports progress from the server's log until the returned func is
// called.
func watch(cfg RunConfig, accessLog string) (stop func()) {
	if cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() {
		tail := &peers.AccessTail{Path: accessLog}
		p := Progress{Target: cfg.Target.Name, Strategy: cfg.Strategy.Name, Duration: cfg.Duration}
		t := time.NewTicker(cfg.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				entries, _ := tail.Read() // progress only: the final read reports errors
				for _, e := range entries {
					switch status := limitedStatus(e, cfg.Target.Refuses); {
					case status < 400:
						p.OK++
					case status == 429:
						p.Limited++
					default:
						p.Other++
					}
				}
				p.Elapsed = now.Sub(start)
				cfg.Progress(p)
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// crawlEngine runs the production engine in-process with the strategy's
// limiter, through the exits as the crawl command builds them.
func crawlEngine(ctx context.Context, cfg RunConfig, base string, exits *Exits, urls int) (client, error) {
	members := make([]fetch.Member, len(exits.Pool))
	for i, e := range exits.Pool {
		t := e.Transport(pool.TransportConfig{ResponseHeaderTimeout: 30 * time.Second})
		defer t.CloseIdleConnections()
		members[i] = fetch.Member{ID: e.ID(), Transport: t, ForwardProxy: e.ForwardsHTTP()}
	}
	// The limiter's change records (why each lane sped up or slowed
	// down) go to limit.log beside the server's log.
	logFile, err := os.Create(filepath.Join(cfg.Dir, "limit.log"))
	if err != nil {
		return client{}, err
	}
	defer logFile.Close()
	p, err := simrun.Live(ctx, simrun.LiveConfig{
		Strategy: cfg.Strategy, Exits: members, Rate: cfg.Target.Rate, Base: base, URLs: urls,
		Duration: cfg.Duration, Seed: cfg.Seed, Timeout: 30 * time.Second,
		Logger: slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		return client{}, err
	}
	c := client{counts: newCounts(), start: p.Start, done: p.Counts.Done, abandoned: p.Counts.Abandoned,
		queued: p.Counts.Queued + p.Counts.Leased, parked: p.Counts.Parked, reasons: p.Counts.AbandonedByReason}
	for _, x := range p.Tally.Exits {
		ip := exits.Bind[x.Name]
		for status, n := range x.ByStatus {
			c.counts.add(ip, status, int(n))
		}
		c.counts.add(ip, 0, int(x.TransportErrors))
	}
	return c, nil
}

// crawlBinary runs `exitgate crawl` exactly as the acceptance check does
// and reads its summary.json.
func crawlBinary(ctx context.Context, cfg RunConfig, base string, exits *Exits, urls int) (client, error) {
	urlFile, err := writeURLs(cfg.Dir, base, urls)
	if err != nil {
		return client{}, err
	}
	if cfg.Workers > 1 {
		return crawlWorkers(ctx, cfg, urlFile, exits, urls)
	}
	out := filepath.Join(cfg.Dir, "crawl")
	// --log-level debug only adds the limiter's change records to the
	// captured stderr; the crawl runs on its defaults otherwise.
	args := []string{"crawl", "--proxies", exits.File, "--duration", cfg.Duration.String(), "--ignore-robots", "--log-level", "debug", urlFile, "--out", out}
	// Setup (the URL file into SQLite) and the end-of-run report come on
	// top of the duration.
	rctx, cancel := context.WithTimeout(ctx, cfg.Duration+3*time.Minute)
	defer cancel()
	// Exit code 4: URLs left to do when --duration ends, as a bench run is
	// meant to.
	crawl := peers.Command{Name: "exitgate-crawl", Bin: cfg.CrawlBinary, Args: args, Dir: cfg.Dir, Success: []int{4}}
	if err := crawl.Run(rctx); err != nil {
		return client{}, err
	}
	sum, err := readSummary(out, urls)
	if err != nil {
		return client{}, err
	}
	c := client{counts: newCounts(), command: append([]string{cfg.CrawlBinary}, args...),
		done: sum.Done, abandoned: sum.Abandoned, queued: sum.Queued, parked: sum.Parked, reasons: sum.AbandonedByReason}
	if err := c.addExits(sum, exits); err != nil {
		return c, err
	}
	c.duplicates, _, err = duplicateURLs([]string{out})
	return c, err
}

// writeURLs writes the run's URL set, one per line, to urls.txt in dir.
func writeURLs(dir, base string, urls int) (string, error) {
	urlFile := filepath.Join(dir, "urls.txt")
	var b strings.Builder
	for i := 1; i <= urls; i++ {
		b.WriteString(simrun.PageURL(base, i, urls))
		b.WriteByte('\n')
	}
	return urlFile, os.WriteFile(urlFile, []byte(b.String()), 0o644)
}

// readSummary reads the summary.json a crawl left in out.
func readSummary(out string, urls int) (report.Summary, error) {
	path := filepath.Join(out, "summary.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return report.Summary{}, err
	}
	var sum report.Summary
	if err := json.Unmarshal(data, &sum); err != nil {
		return sum, fmt.Errorf("%s: %w", path, err)
	}
	if sum.URLs != urls {
		return sum, fmt.Errorf("%s: %d URLs, the URL file has %d", path, sum.URLs, urls)
	}
	return sum, nil
}

// addExits adds a summary's responses per exit to c's counts.
func (c *client) addExits(sum report.Summary, exits *Exits) error {
	for _, x := range sum.PerExit {
		ip, ok := exits.Bind[x.Name]
		if !ok {
			return fmt.Errorf("summary.json: per_exit %q is not one of the exits", x.Name)
		}
		for status, n := range x.ResponsesByStatus {
			code, err := strconv.Atoi(status)
			if err != nil {
				return fmt.Errorf("summary.json: per_exit %s: status %q", x.Name, status)
			}
			c.counts.add(ip, code, int(n))
		}
		c.counts.add(ip, 0, int(x.TransportErrors))
	}
	return nil
}

// alive checks that the target still accepts connections after the run:
// a server that died mid-run would otherwise pass for one that limits hard.
func alive(srv Server) error {
	u, err := url.Parse(srv.URL())
	if err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		return fmt.Errorf("the target no longer answers at the end of the run: %w", err)
	}
	return c.Close()
}

// serverLog reads the server's access log once it holds at least want
// lines: a server logs just after it answers, so the client may be a
// moment ahead. It polls for at most 5 s, then returns what is there (the
// cross-check reports a shortfall).
func serverLog(ctx context.Context, srv Server, want int) ([]peers.AccessEntry, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		log, err := peers.ReadAccessLog(srv.AccessLogPath())
		if err != nil {
			return nil, err
		}
		if len(log) >= want || time.Now().After(deadline) || ctx.Err() != nil {
			return log, nil
		}
		time.Sleep(20 * time.Millisecond) // polling a file the server appends to; bounded above
	}
}

// judge fills the server's figures and the cross-check. start zero means
// the first request the server logged from an exit.
func (r *Result) judge(log []peers.AccessEntry, binds map[string]string, start time.Time, cfg RunConfig) error {
	isExit := map[string]bool{}
	for _, ip := range binds {
		isExit[ip] = true
	}
	r.ServerCounts = newCounts()
	var hits []measure.Hit
	strangers := 0
	var stranger string
	var first time.Time
	for _, e := range log {
		if !isExit[e.RemoteAddr] {
			strangers++
			stranger = e.RemoteAddr
			continue
		}
		r.ServerCounts.add(e.RemoteAddr, e.Status, 1)
		hits = append(hits, measure.Hit{At: e.Time, Key: e.RemoteAddr, Status: limitedStatus(e, cfg.Target.Refuses)})
		if first.IsZero() || e.Time.Before(first) {
			first = e.Time
		}
	}
	if first.IsZero() {
		// Say what it did log, so that a run that failed this way (once,
		// under the whole suite's load) can be told apart: a server that
		// logged nothing, or exits that did not send from their addresses.
		sent := fmt.Sprintf("the crawl counted %d requests, %d of them transport errors", r.ClientCounts.Requests, r.ClientCounts.TransportErrors)
		if strangers > 0 {
			return fmt.Errorf("the server logged no request from the exits, %d from other addresses (%s, ...); %s", strangers, stranger, sent)
		}
		return fmt.Errorf("the server logged no request at all; %s", sent)
	}
	if start.IsZero() {
		start = first
	}
	r.Start, r.firstHit = start, first
	f, err := measure.Compute(hits, measure.Config{Start: start, End: start.Add(cfg.Duration), Keys: cfg.Exits, Rate: cfg.Target.Rate})
	if err != nil {
		return err
	}
	r.Server = f
	r.Mismatches = compare(r.ClientCounts, r.ServerCounts)
	if strangers > 0 {
		r.Mismatches = append(r.Mismatches, fmt.Sprintf("the server logged %d requests from addresses that are not exits", strangers))
	}
	r.Agree = len(r.Mismatches) == 0
	return nil
}

// limitedStatus is e's status for the measure: a request nginx's limit
// rejected (limit=REJECTED in its log) is limited whatever status it was
// answered with (limit_req_status 503, nginx's default, is no overload),
// and so is one answered with the status the target refuses with
// (Target.Refuses: mod_evasive's 403).
func limitedStatus(e peers.AccessEntry, refuses int) int {
	if e.Limit == "REJECTED" || refuses != 0 && e.Status == refuses {
		return http.StatusTooManyRequests
	}
	return e.Status
}

// compare lists where the client's and the server's counts differ, per exit
// and status. A request that failed on the client (a transport error) may
// or may not have reached the server: up to that many extra server lines on
// an exit are not a mismatch.
func compare(client, server Counts) []string {
	var out []string
	ips := map[string]bool{}
	for ip := range client.PerExit {
		ips[ip] = true
	}
	for ip := range server.PerExit {
		ips[ip] = true
	}
	for _, ip := range slices.Sorted(maps.Keys(ips)) {
		c, s := client.PerExit[ip], server.PerExit[ip]
		statuses := map[int]bool{}
		for k := range c {
			statuses[k] = true
		}
		for k := range s {
			statuses[k] = true
		}
		missing, extra := 0, 0
		var diffs []string
		for _, st := range slices.Sorted(maps.Keys(statuses)) {
			switch d := s[st] - c[st]; {
			case d > 0:
				extra += d
				diffs = append(diffs, fmt.Sprintf("%d: client %d, server %d", st, c[st], s[st]))
			case d < 0:
				missing -= d
				diffs = append(diffs, fmt.Sprintf("%d: client %d, server %d", st, c[st], s[st]))
			}
		}
		if len(diffs) == 0 || missing == 0 && extra <= client.errorsPerExit[ip] {
			continue
		}
		out = append(out, fmt.Sprintf("exit %s: %s", ip, strings.Join(diffs, "; ")))
	}
	return out
}
