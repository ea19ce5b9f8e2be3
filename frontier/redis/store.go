// Package redis is a frontier.Frontier on Redis, shared by every worker of
// a crawl: per-host queues with due times, leases with a visibility
// timeout (a dead worker's jobs come back), parked jobs in the same
// due-time sorted set, exact deduplication, fair round-robin across hosts,
// and finished jobs paged in ID order and counted per crawl name.
//
// # Keys
//
// Every key of a crawl starts with "eg:"; a host's keys share the hash tag
// {<crawl>|<host>} and so one Redis Cluster slot, which makes each host
// operation one atomic script (scripts.go) on one node. The crawl's own
// keys ({<crawl>}) hold the host registry and the schedule of hosts with
// work due. A push, a claim or a settle is one script on the host's slot;
// a claim also reads and updates the schedule (two more round trips per
// batch of jobs), and a settle that makes work due earlier updates it
// (one more).
//
// # Job IDs
//
// A job's ID is its host's number in the crawl (registered once) times
// 2^32 plus its sequence within the host, so Get and the settling calls
// find the host of any ID without an index, and Finished pages host after
// host in ID order.
//
// # Time
//
// Times are kept to the millisecond: due times and lease expiries are
// rounded up, so nothing is claimed early.
//
// # Outages
//
// Leases this Store handed out are kept alive by a background loop
// (Config.KeepAlive), so only a worker that died loses its leases, within
// one LeaseTTL. While Redis is unreachable (connection errors, a server
// loading its data, a cluster slot without a master) settling calls are
// journaled to Config.Journal instead and return nil, claims return no
// jobs, Counts returns the last counts read, and the loop replays the
// journal once Redis answers again: a done or abandoned answer replays onto
// any unfinished job (it is never fetched again); the others only onto the
// lease they were made under.
package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/exitgate/exitgate/frontier"
)

// Config configures a Store. The zero value of each field is its default.
type Config struct {
	// Crawl names the crawl: every worker given the same name shares its
	// frontier. Required; no braces.
	Crawl string
	// LeaseTTL is the visibility timeout: a lease not extended for this
	// long makes its job claimable again. Default 15s.
	LeaseTTL time.Duration
	// KeepAlive, when set, extends this Store's outstanding leases every
	// LeaseTTL/3 and replays the journal after an outage, from a goroutine
	// that Close ends.
	KeepAlive bool
	// Journal is a file for settling calls made while Redis is unreachable.
	// Empty: such calls fail with the Redis error.
	Journal string
	// Logger receives outage notices. nil: discard.
	Logger *slog.Logger
}

// Store is a Redis frontier. It is safe for concurrent use, and many Stores
// in many processes may share one crawl.
type Store struct {
	rdb   goredis.UniversalClient
	cfg   Config
	ttlMs int64
	log   *slog.Logger

	mu      sync.Mutex
	hostNum map[string]int64
	numHost map[int64]string
	held    map[int64]heldLease // leases handed out and not settled
	lost    map[int64]int64     // leases the keep-alive found lost, by job: seq (LeaseLost)
	counts  frontier.Counts     // the last counts read
	read    bool                // counts holds a reading (not the zero value)
	// The last Ready answer, reused for readyMemo: an engine whose hosts
	// are due but held by the limiter asks every 100 ms, and each answer
	// costs three or four round trips.
	memo      frontier.Ready
	memoAt    time.Time
	memoValid bool
	down      bool // Redis unreachable: settle to the journal
	journal   *os.File
	// claimFrom: after an outage, this Store claims nothing before then
	// (backGrace), so that the other workers replay their journals first.
	claimFrom time.Time
	// known: this Store has seen the crawl's host registry in Redis (it
	// pushed or read a host). Seen once and then missing, the crawl's
	// keys were lost (ErrCrawlGone), not finished.
	known bool
	// epoch is the crawl's incarnation as this Store last read it (its
	// crawlKey("epoch"), set by the Push that seeds the crawl): journal
	// entries carry it, and one of another incarnation is not replayed.
	// A crawl whose keys were lost and that was seeded again under its
	// name took a killed worker's old entries as its own: 12 URLs never
	// fetched marked done, their rows naming other URLs' bodies.
	epoch string

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

type heldLease struct {
	host string
	seq  int64
}

// New returns a Store for cfg.Crawl on rdb (a *goredis.Client or a
// *goredis.ClusterClient). Close it to stop its goroutine; rdb stays the
// caller's.
func New(rdb goredis.UniversalClient, cfg Config) (*Store, error) {
	if cfg.Crawl == "" || strings.ContainsAny(cfg.Crawl, "{}") {
		return nil, fmt.Errorf("frontier/redis: crawl name %q: want a non-empty name without braces", cfg.Crawl)
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 15 * time.Second
	}
	s := &Store{rdb: rdb, cfg: cfg, ttlMs: max(1, cfg.LeaseTTL.Milliseconds()), log: cfg.Logger,
		hostNum: map[string]int64{}, numHost: map[int64]string{}, held: map[int64]heldLease{}, lost: map[int64]int64{},
		stop: make(chan struct{}), done: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Journal != "" {
		f, err := os.OpenFile(cfg.Journal, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("frontier/redis: journal: %w", err)
		}
		s.journal = f
		if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
			// Entries left by an earlier run (killed while Redis was
			// away): replay them before anything else, now if Redis
			// answers. Left for the keep-alive, the worker read the
			// crawl's counts as the empty ones of a Store that never
			// read them, took the crawl for one not seeded yet and
			// exited, its journal never replayed (its URLs fetched
			// again by the others).
			s.down = true
			ctx, cancel := context.WithTimeout(context.Background(), openReplayTimeout)
			if n, err := s.recover(ctx); err == nil {
				s.log.Info("frontier: replayed the journal an earlier run left", "entries", n)
			}
			cancel()
		}
	}
	if cfg.KeepAlive {
		go s.keep()
	} else {
		close(s.done)
	}
	return s, nil
}

// Close ends the keep-alive loop, hands back nothing (leases held are left
// to expire or be settled) and closes the journal. Settles still journaled
// (Redis away) get one more replay, bounded by closeReplayTimeout; those
// left are said, with the journal's path: another worker's claim of those
// jobs fetches them again unless this worker runs again first (a worker
// stopped during an outage said "nothing is lost", and six URLs it had
// fetched were fetched again).
func (s *Store) Close() error {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	if s.journaledSettles() > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), closeReplayTimeout)
		_, err := s.Replay(ctx)
		cancel()
		if left := s.journaledSettles(); left > 0 {
			s.log.Warn("frontier: this worker's finished URLs are journaled, not yet in Redis (it does not answer): run the same command with the same --out once Redis answers, or other workers fetch them again",
				"journal", s.cfg.Journal, "entries", left, "err", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journal != nil {
		err := s.journal.Close()
		s.journal = nil
		return err
	}
	return nil
}

// ErrCrawlGone: the crawl's keys are no longer in Redis though this Store
// saw them (Redis restarted without persistence, a FLUSHALL, an eviction).
// What was queued there is lost; a crawl that read the empty frontier as
// finished exited 0 with a quarter of its URLs never fetched.
var ErrCrawlGone = errors.New("the crawl's keys are gone from Redis (restarted without persistence, flushed or evicted): what was queued there is lost")

// ErrUnreachable: Redis cannot be reached and this Store has read nothing
// of the crawl yet (a worker started during an outage, its journal from an
// earlier run not replayed).
var ErrUnreachable = errors.New("frontier/redis: Redis cannot be reached, and nothing of the crawl has been read from it yet")

// gone returns ErrCrawlGone, wrapped with the crawl's name, when this
// Store saw the crawl's host registry and Redis no longer holds it; nil
// otherwise, or when Redis cannot tell.
func (s *Store) gone(ctx context.Context) error {
	s.mu.Lock()
	known := s.known
	s.mu.Unlock()
	if !known {
		return nil
	}
	if n, err := s.rdb.Exists(ctx, s.crawlKey("names")).Result(); err != nil || n > 0 {
		return nil
	}
	return fmt.Errorf("frontier/redis: crawl %q: %w", s.cfg.Crawl, ErrCrawlGone)
}

// seedEpoch gives the crawl an incarnation if it has none (the push that
// seeds it) and reads it.
func (s *Store) seedEpoch(ctx context.Context) error {
	s.mu.Lock()
	have := s.epoch != ""
	s.mu.Unlock()
	if have {
		return nil
	}
	var b [8]byte
	rand.Read(b[:])
	if err := s.rdb.SetNX(ctx, s.crawlKey("epoch"), hex.EncodeToString(b[:]), 0).Err(); err != nil {
		return err
	}
	return s.loadEpoch(ctx)
}

// loadEpoch reads the crawl's incarnation ("" while it has none).
func (s *Store) loadEpoch(ctx context.Context) error {
	e, err := s.rdb.Get(ctx, s.crawlKey("epoch")).Result()
	if errors.Is(err, goredis.Nil) {
		return nil
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.epoch = e
	s.mu.Unlock()
	return nil
}

// Key names.

func (s *Store) crawlKey(name string) string { return "eg:{" + s.cfg.Crawl + "}:" + name }

// hostTag is the hash tag of a host's keys. A host key with braces (a
// custom one) is tagged by its quoted form without them.
func (s *Store) hostKeys(host string) []string {
	tag := host
	if strings.ContainsAny(tag, "{}") {
		tag = strings.NewReplacer("{", "%7B", "}", "%7D").Replace(tag)
	}
	p := "eg:{" + s.cfg.Crawl + "|" + tag + "}:"
	return []string{p + "jobs", p + "due", p + "lease", p + "fin", p + "cnt", p + "keys"}
}

func (s *Store) schedKeys() []string {
	return []string{s.crawlKey("sched"), s.crawlKey("ver"), s.crawlKey("order")}
}

// Time in milliseconds, rounded up for due times and leases (never early)
// and down for now (never late).
func msUp(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	ms := t.UnixMilli()
	if time.UnixMilli(ms).Before(t) {
		ms++
	}
	return ms
}

func msDown(t time.Time) int64 { return t.UnixMilli() }

func fromMs(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// IDs.

const seqBits = 32

func jobID(hostNum, seq int64) int64 { return hostNum<<seqBits | seq }

func splitID(id int64) (hostNum, seq int64) { return id >> seqBits, id & (1<<seqBits - 1) }

func member(seq int64) string { return fmt.Sprintf("%010d", seq) }

// unavailable reports whether err means Redis cannot be reached now (as
// opposed to a reply refusing the command), so the call may be journaled
// and replayed.
func unavailable(err error) bool {
	if err == nil || errors.Is(err, goredis.Nil) || errors.Is(err, ErrCrawlGone) {
		// Lost keys are no outage: read as one, a worker journaled,
		// found Redis "back", replayed nothing and read them gone again,
		// every keep-alive, for good.
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, goredis.ErrClosed) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	msg := err.Error()
	for _, p := range []string{"LOADING", "CLUSTERDOWN", "READONLY", "MASTERDOWN", "TRYAGAIN", "connection refused", "broken pipe", "connection reset", "i/o timeout", "pool timeout"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	var re goredis.Error
	return !errors.As(err, &re)
}

// Host registry.

// numbers returns the crawl numbers of hosts, registering new ones.
func (s *Store) numbers(ctx context.Context, hosts []string) (map[string]int64, error) {
	out := make(map[string]int64, len(hosts))
	var missing []any
	s.mu.Lock()
	for _, h := range hosts {
		if n, ok := s.hostNum[h]; ok {
			out[h] = n
		} else if !slices.Contains(missing, any(h)) {
			missing = append(missing, h)
		}
	}
	s.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	res, err := registerScript.Run(ctx, s.rdb, []string{s.crawlKey("hosts"), s.crawlKey("names")}, missing...).Int64Slice()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	for i, h := range missing {
		name := h.(string)
		s.hostNum[name], s.numHost[res[i]] = res[i], name
		out[name] = res[i]
	}
	s.known = true
	s.mu.Unlock()
	return out, nil
}

// hostOf returns the host of a job ID, reading the registry if this Store
// has not seen the number yet ("" when no host has it).
func (s *Store) hostOf(ctx context.Context, id int64) (string, error) {
	num, _ := splitID(id)
	s.mu.Lock()
	h, ok := s.numHost[num]
	s.mu.Unlock()
	if ok {
		return h, nil
	}
	h, err := s.rdb.HGet(ctx, s.crawlKey("names"), strconv.FormatInt(num, 10)).Result()
	if errors.Is(err, goredis.Nil) || num <= 0 {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.numHost[num], s.hostNum[h] = h, num
	s.mu.Unlock()
	return h, nil
}

// allHosts returns every registered host by number.
func (s *Store) allHosts(ctx context.Context) (map[int64]string, error) {
	m, err := s.rdb.HGetAll(ctx, s.crawlKey("names")).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[int64]string, len(m))
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range m {
		n, err := strconv.ParseInt(k, 10, 64)
		if err != nil || n <= 0 {
			continue // the "n" counter
		}
		out[n] = v
		s.numHost[n], s.hostNum[v] = v, n
	}
	s.known = s.known || len(out) > 0
	return out, nil
}

// Records.

const sep = "\x1f"

func clean(s string) string { return strings.ReplaceAll(s, sep, " ") }

func encResult(r frontier.Result) string {
	t := "0"
	if r.Truncated {
		t = "1"
	}
	return strings.Join([]string{strconv.Itoa(r.Status), strconv.FormatInt(r.Bytes, 10),
		strconv.FormatInt(int64(r.Elapsed), 10), t, clean(r.Exit), clean(r.Body)}, ",")
}

func decResult(s string) frontier.Result {
	if s == "" {
		return frontier.Result{}
	}
	f := strings.SplitN(s, ",", 6)
	if len(f) < 6 {
		return frontier.Result{}
	}
	var r frontier.Result
	r.Status, _ = strconv.Atoi(f[0])
	r.Bytes, _ = strconv.ParseInt(f[1], 10, 64)
	el, _ := strconv.ParseInt(f[2], 10, 64)
	r.Elapsed = time.Duration(el)
	r.Truncated = f[3] == "1"
	r.Exit, r.Body = f[4], f[5]
	return r
}

// jobExtra is a job's own headers and metadata, the record's 12th field
// (JSON escapes the field separator).
type jobExtra struct {
	Header http.Header       `json:"h,omitempty"`
	Meta   map[string]string `json:"m,omitempty"`
}

// encExtra is a job's extra field: empty when it has neither.
func encExtra(j frontier.Job) (string, error) {
	if len(j.Header) == 0 && len(j.Meta) == 0 {
		return "", nil
	}
	b, err := json.Marshal(jobExtra{Header: j.Header, Meta: j.Meta})
	return string(b), err
}

// decJob rebuilds a job from its record.
func decJob(host string, num int64, mem, rec string) (frontier.Job, error) {
	f := strings.Split(rec, sep)
	if len(f) < 11 {
		return frontier.Job{}, fmt.Errorf("frontier/redis: job %s of %s: bad record", mem, host)
	}
	seq, _ := strconv.ParseInt(mem, 10, 64)
	num64 := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
	j := frontier.Job{
		ID: jobID(num, seq), URL: f[7], Host: host, Method: f[8], Exit: f[9],
		State: frontier.State(num64(f[0])), Seq: num64(f[1]), Attempts: int(num64(f[2])),
		Due: fromMs(num64(f[3])), LeaseUntil: fromMs(num64(f[4])), Status: int(num64(f[5])), Reason: f[6],
	}
	if j.State == frontier.Done {
		j.Result = decResult(f[10])
	}
	if len(f) > 11 && f[11] != "" {
		var x jobExtra
		if err := json.Unmarshal([]byte(f[11]), &x); err != nil {
			return frontier.Job{}, fmt.Errorf("frontier/redis: job %s of %s: headers and metadata: %w", mem, host, err)
		}
		j.Header, j.Meta = x.Header, x.Meta
	}
	if p, err := frontier.Prepare(frontier.NewJob{URL: j.URL, Host: host, Method: j.Method}); err == nil {
		j.Key = p.Key
	}
	return j, nil
}

// Push adds new jobs, one script per host.
func (s *Store) Push(ctx context.Context, jobs []frontier.NewJob) (int, error) {
	prepared, err := frontier.PrepareAll(jobs)
	if err != nil {
		return 0, err
	}
	if len(prepared) == 0 {
		return 0, nil
	}
	byHost := map[string][]frontier.Job{}
	var order []string
	for _, j := range prepared {
		if _, ok := byHost[j.Host]; !ok {
			order = append(order, j.Host)
		}
		byHost[j.Host] = append(byHost[j.Host], j)
	}
	if err := s.seedEpoch(ctx); err != nil {
		return 0, err
	}
	if _, err := s.numbers(ctx, order); err != nil {
		return 0, err
	}
	added := 0
	var reports []report
	for _, h := range order {
		js := byHost[h]
		for start := 0; start < len(js); start += 1000 {
			part := js[start:min(len(js), start+1000)]
			args := make([]any, 0, 1+3*len(part))
			args = append(args, len(part))
			for _, j := range part {
				extra, err := encExtra(j)
				if err != nil {
					return added, fmt.Errorf("frontier/redis: %s: headers and metadata: %w", j.URL, err)
				}
				args = append(args, j.Method+" "+j.Key, clean(j.URL)+sep+clean(j.Method)+sep+clean(j.Exit)+sep+sep+extra, msUp(j.Due))
			}
			res, err := pushScript.Run(ctx, s.rdb, s.hostKeys(h), args...).Int64Slice()
			if err != nil {
				return added, err
			}
			added += int(res[0])
			reports = append(reports, report{host: h, next: res[1], v: res[2]})
		}
	}
	return added, s.schedule(ctx, reports)
}

// report is one host's state after a host script, for the schedule.
type report struct {
	host    string
	next, v int64
	served  bool
}

func (s *Store) schedule(ctx context.Context, rs []report) error {
	if len(rs) == 0 {
		return nil
	}
	args := make([]any, 0, 4*len(rs))
	for _, r := range rs {
		sv := 0
		if r.served {
			sv = 1
		}
		args = append(args, r.host, r.next, r.v, sv)
	}
	return scheduleScript.Run(ctx, s.rdb, s.schedKeys(), args...).Err()
}

// Claim leases up to max due jobs, round-robin over hosts least recently
// served first.
func (s *Store) Claim(ctx context.Context, now time.Time, max int, hostOK func(host string) bool) ([]frontier.Job, error) {
	if max <= 0 || s.claimPaused() {
		return nil, nil
	}
	cands, err := s.candidates(ctx, now, min(4096, 8*max+64))
	if err != nil {
		return nil, s.readErr(err)
	}
	var hosts []string
	for _, h := range cands {
		if hostOK == nil || hostOK(h) {
			hosts = append(hosts, h)
		}
	}
	return s.claimHosts(ctx, hosts, now, max)
}

// ClaimHost leases up to max due jobs of host.
func (s *Store) ClaimHost(ctx context.Context, host string, now time.Time, max int) ([]frontier.Job, error) {
	if max <= 0 || s.claimPaused() {
		return nil, nil
	}
	s.mu.Lock()
	_, known := s.hostNum[host]
	s.mu.Unlock()
	if !known {
		ok, err := s.rdb.HExists(ctx, s.crawlKey("hosts"), host).Result()
		if err != nil || !ok {
			return nil, s.readErr(err)
		}
	}
	return s.claimHosts(ctx, []string{host}, now, max)
}

// claimHosts spreads max over hosts in order: each round gives every host
// with work left its share of what is left, so a claim takes max jobs
// whenever that many are due however they spread.
func (s *Store) claimHosts(ctx context.Context, hosts []string, now time.Time, max int) ([]frontier.Job, error) {
	if len(hosts) == 0 {
		return nil, nil
	}
	nums, err := s.numbers(ctx, hosts)
	if err != nil {
		return nil, s.readErr(err)
	}
	nowMs := msDown(now)
	until := msUp(now) + s.ttlMs
	var out []frontier.Job
	reps := map[string]report{}
	live := slices.Clone(hosts)
	for len(out) < max && len(live) > 0 {
		var next []string
		for i, h := range live {
			left := max - len(out)
			if left <= 0 {
				break
			}
			share := (left + len(live) - i - 1) / (len(live) - i)
			res, err := claimScript.Run(ctx, s.rdb, s.hostKeys(h), nowMs, share, until).StringSlice()
			if err != nil {
				return out, s.readErr(errors.Join(err, s.scheduleMap(ctx, reps)))
			}
			n := len(res) - 2
			nx, _ := strconv.ParseInt(res[n], 10, 64)
			v, _ := strconv.ParseInt(res[n+1], 10, 64)
			r := report{host: h, next: nx, v: v}
			r.served = n > 0 || reps[h].served
			reps[h] = r
			for k := 0; k < n; k += 2 {
				j, err := decJob(h, nums[h], res[k], res[k+1])
				if err != nil {
					return out, err
				}
				out = append(out, j)
			}
			if n/2 == share && nx >= 0 && nx <= nowMs {
				next = append(next, h)
			}
		}
		live = next
	}
	s.mu.Lock()
	for _, j := range out {
		s.held[j.ID] = heldLease{host: j.Host, seq: j.Seq}
	}
	s.mu.Unlock()
	return out, s.readErr(s.scheduleMap(ctx, reps))
}

func (s *Store) scheduleMap(ctx context.Context, m map[string]report) error {
	return s.schedule(ctx, slices.Collect(maps.Values(m)))
}

// candidates returns hosts the schedule says have work due at now, least
// recently served first.
func (s *Store) candidates(ctx context.Context, now time.Time, limit int) ([]string, error) {
	return candidatesScript.Run(ctx, s.rdb, s.schedKeys(), msDown(now), limit).StringSlice()
}

// peek reads hosts' next times, in order, pipelined.
func (s *Store) peek(ctx context.Context, hosts []string) ([]report, error) {
	out := make([]report, 0, len(hosts))
	for start := 0; start < len(hosts); start += 256 {
		part := hosts[start:min(len(hosts), start+256)]
		pipe := s.rdb.Pipeline()
		cmds := make([]*goredis.Cmd, len(part))
		for i, h := range part {
			cmds[i] = peekScript.EvalSha(ctx, pipe, s.hostKeys(h))
		}
		_, _ = pipe.Exec(ctx)
		for i, h := range part {
			res, err := cmds[i].Int64Slice()
			if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
				res, err = peekScript.Run(ctx, s.rdb, s.hostKeys(h)).Int64Slice()
			}
			if err != nil {
				return nil, err
			}
			out = append(out, report{host: h, next: res[0], v: res[1]})
		}
	}
	return out, nil
}

// Ready reports hosts with claimable work at now, least recently served
// first, and when more falls due.
func (s *Store) Ready(ctx context.Context, now time.Time, max int) (frontier.Ready, error) {
	s.mu.Lock()
	if s.memoValid && max == 1 && !now.Before(s.memoAt) && now.Sub(s.memoAt) < readyMemo &&
		len(s.memo.Hosts) > 0 {
		r := frontier.Ready{Hosts: slices.Clone(s.memo.Hosts), Next: s.memo.Next}
		s.mu.Unlock()
		return r, nil
	}
	s.mu.Unlock()
	r, err := s.ready(ctx, now, max)
	if err == nil && max == 1 {
		s.mu.Lock()
		s.memo, s.memoAt, s.memoValid = r, now, true
		s.mu.Unlock()
	}
	if err != nil {
		if err = s.readErr(err); err == nil {
			// Redis is away: ask again soon, with nothing claimable now.
			return frontier.Ready{Next: now.Add(time.Second)}, nil
		}
	}
	return r, err
}

// readyMemo is how long a Ready(1) answer with a host due is reused: a
// hint to look again, which a claim then checks.
const readyMemo = 500 * time.Millisecond

func (s *Store) ready(ctx context.Context, now time.Time, max int) (frontier.Ready, error) {
	if s.isDown() {
		return frontier.Ready{Next: now.Add(time.Second)}, nil
	}
	nowMs := msDown(now)
	cands, err := s.candidates(ctx, now, 4096)
	if err != nil {
		return frontier.Ready{}, err
	}
	reps, err := s.peek(ctx, cands)
	if err != nil {
		return frontier.Ready{}, err
	}
	var r frontier.Ready
	next := int64(math.MaxInt64)
	var fix []report
	for _, rep := range reps {
		switch {
		case rep.next >= 0 && rep.next <= nowMs:
			if max <= 0 || len(r.Hosts) < max {
				r.Hosts = append(r.Hosts, rep.host)
			}
		default:
			fix = append(fix, rep) // the schedule ran early: correct it
			if rep.next >= 0 {
				next = min(next, rep.next)
			}
		}
	}
	if err := s.schedule(ctx, fix); err != nil {
		return frontier.Ready{}, err
	}
	// The first host the schedule says gets work later: check it (a
	// settle that made a host's work later does not tell the schedule),
	// correct it, and look at the next, until one is right.
	for range 256 {
		later, err := s.rdb.ZRangeArgsWithScores(ctx, goredis.ZRangeArgs{Key: s.crawlKey("sched"),
			Start: "(" + strconv.FormatInt(nowMs, 10), Stop: "+inf", ByScore: true, Count: 1}).Result()
		if err != nil {
			return frontier.Ready{}, err
		}
		if len(later) == 0 || int64(later[0].Score) >= next {
			break
		}
		h, _ := later[0].Member.(string)
		reps, err := s.peek(ctx, []string{h})
		if err != nil {
			return frontier.Ready{}, err
		}
		if reps[0].next == int64(later[0].Score) {
			next = reps[0].next
			break
		}
		if reps[0].next >= 0 && reps[0].next <= nowMs && (max <= 0 || len(r.Hosts) < max) {
			r.Hosts = append(r.Hosts, h)
		}
		if err := s.schedule(ctx, reps); err != nil {
			return frontier.Ready{}, err
		}
	}
	if next != math.MaxInt64 {
		r.Next = fromMs(next)
	} else if len(r.Hosts) == 0 {
		// Nothing left at all: finished, or lost.
		if err := s.gone(ctx); err != nil {
			return frontier.Ready{}, err
		}
	}
	return r, nil
}

// Settling.

func (s *Store) settle(ctx context.Context, op string, l frontier.Lease, args ...any) error {
	host, err := s.hostOf(ctx, l.ID)
	if err != nil {
		if unavailable(err) && s.journal != nil {
			return s.journalOp(op, l, args)
		}
		return err
	}
	if host == "" {
		return frontier.ErrNotFound
	}
	return s.settleOn(ctx, host, op, l, false, args...)
}

func (s *Store) settleOn(ctx context.Context, host, op string, l frontier.Lease, force bool, args ...any) error {
	if s.isDown() && s.journal != nil {
		return s.journalOp(op, l, args)
	}
	_, seq := splitID(l.ID)
	f := "0"
	if force {
		f = "1"
	}
	all := append([]any{op, member(seq), strconv.FormatInt(l.Seq, 10), f}, args...)
	res, err := settleScript.Run(ctx, s.rdb, s.hostKeys(host), all...).Int64Slice()
	if err != nil {
		if unavailable(err) && s.journal != nil {
			s.setDown(err)
			return s.journalOp(op, l, args)
		}
		return err
	}
	if op != "extend" {
		s.mu.Lock()
		delete(s.held, l.ID)
		delete(s.lost, l.ID)
		s.mu.Unlock()
	}
	switch res[0] {
	case 1:
		if err := s.gone(ctx); err != nil {
			return err
		}
		if n, err := s.rdb.Exists(ctx, s.hostKeys(host)[4]).Result(); err == nil && n == 0 {
			// The host's keys alone are gone (evicted, a cluster shard
			// lost): said so (it read "job not found").
			return fmt.Errorf("frontier/redis: crawl %q: the keys of host %s are gone from Redis (evicted, or the shard that held them lost): its queued URLs are lost; %w", s.cfg.Crawl, host, frontier.ErrNotFound)
		}
		return frontier.ErrNotFound
	case 2:
		return frontier.ErrLeaseLost
	}
	if op == "retry" || op == "park" || op == "release" {
		// Work due earlier than the schedule may say: tell it.
		if err := s.schedule(ctx, []report{{host: host, next: res[1], v: res[2]}}); err != nil && !unavailable(err) {
			return err
		}
	}
	return nil
}

// Extend moves a held lease's expiry to until.
func (s *Store) Extend(ctx context.Context, l frontier.Lease, until time.Time) error {
	return s.settle(ctx, "extend", l, msUp(until))
}

// Complete marks the job done.
func (s *Store) Complete(ctx context.Context, l frontier.Lease, r frontier.Result) error {
	return s.settle(ctx, "done", l, r.Status, encResult(r))
}

// Retry queues the job again, due at at.
func (s *Store) Retry(ctx context.Context, l frontier.Lease, at time.Time, charge bool, status int, reason string) error {
	c := "0"
	if charge {
		c = "1"
	}
	return s.settle(ctx, "retry", l, msUp(at), c, status, clean(reason))
}

// Park holds the job until until.
func (s *Store) Park(ctx context.Context, l frontier.Lease, until time.Time, status int, reason string) error {
	return s.settle(ctx, "park", l, msUp(until), status, clean(reason))
}

// Abandon gives up on the job.
func (s *Store) Abandon(ctx context.Context, l frontier.Lease, status int, reason string) error {
	return s.settle(ctx, "abandon", l, status, clean(reason))
}

// Release returns the job to the queue, due now.
func (s *Store) Release(ctx context.Context, l frontier.Lease) error {
	return s.settle(ctx, "release", l)
}

// Reading.

// Get returns one job.
func (s *Store) Get(ctx context.Context, id int64) (frontier.Job, error) {
	host, err := s.hostOf(ctx, id)
	if err != nil {
		return frontier.Job{}, err
	}
	if host == "" {
		return frontier.Job{}, frontier.ErrNotFound
	}
	num, seq := splitID(id)
	rec, err := s.rdb.HGet(ctx, s.hostKeys(host)[0], member(seq)).Result()
	if errors.Is(err, goredis.Nil) {
		return frontier.Job{}, frontier.ErrNotFound
	}
	if err != nil {
		return frontier.Job{}, err
	}
	return decJob(host, num, member(seq), rec)
}

// Counts adds up every host's counts. While Redis is unreachable it
// returns the last counts read.
func (s *Store) Counts(ctx context.Context) (frontier.Counts, error) {
	if s.isDown() {
		s.mu.Lock()
		read := s.read
		s.mu.Unlock()
		if !read {
			// Nothing read yet: zero counts would say "not seeded".
			return frontier.Counts{}, ErrUnreachable
		}
		return s.lastCounts(), nil
	}
	hosts, err := s.allHosts(ctx)
	if err != nil {
		return s.countsErr(err)
	}
	if len(hosts) == 0 {
		if err := s.gone(ctx); err != nil {
			return s.lastCounts(), err
		}
	}
	c := frontier.Counts{AbandonedByReason: map[string]int{}}
	names := slices.Collect(maps.Values(hosts))
	for start := 0; start < len(names); start += 256 {
		part := names[start:min(len(names), start+256)]
		pipe := s.rdb.Pipeline()
		cmds := make([]*goredis.MapStringStringCmd, len(part))
		for i, h := range part {
			cmds[i] = pipe.HGetAll(ctx, s.hostKeys(h)[4])
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
			return s.countsErr(err)
		}
		for _, cmd := range cmds {
			for k, v := range cmd.Val() {
				n, _ := strconv.Atoi(v)
				switch {
				case k == "queued":
					c.Queued += n
				case k == "leased":
					c.Leased += n
				case k == "parked":
					c.Parked += n
				case k == "done":
					c.Done += n
				case k == "abandoned":
					c.Abandoned += n
				case strings.HasPrefix(k, "ab:") && n > 0:
					c.AbandonedByReason[k[3:]] += n
				}
			}
		}
	}
	s.mu.Lock()
	s.counts, s.read = c, true
	s.mu.Unlock()
	return c, nil
}

// ExpiredLeases counts the leased jobs whose lease ended before now: their
// worker stopped or died without handing them back. They are still
// counted leased (Counts), and go back to work when a live worker next
// claims from their host, or Recover runs; status says so apart.
func (s *Store) ExpiredLeases(ctx context.Context, now time.Time) (int, error) {
	hosts, err := s.allHosts(ctx)
	if err != nil {
		return 0, err
	}
	names := slices.Collect(maps.Values(hosts))
	until := strconv.FormatInt(msDown(now), 10)
	n := 0
	for start := 0; start < len(names); start += 256 {
		part := names[start:min(len(names), start+256)]
		pipe := s.rdb.Pipeline()
		cmds := make([]*goredis.IntCmd, len(part))
		for i, h := range part {
			cmds[i] = pipe.ZCount(ctx, s.hostKeys(h)[2], "-inf", "("+until)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
			return n, err
		}
		for _, cmd := range cmds {
			n += int(cmd.Val())
		}
	}
	return n, nil
}

func (s *Store) lastCounts() frontier.Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.counts
	c.AbandonedByReason = maps.Clone(c.AbandonedByReason)
	return c
}

func (s *Store) countsErr(err error) (frontier.Counts, error) {
	if unavailable(err) && s.journal != nil {
		s.setDown(err)
		return s.lastCounts(), nil
	}
	return frontier.Counts{}, err
}

// Finished pages done and abandoned jobs in ID order.
func (s *Store) Finished(ctx context.Context, after int64, limit int) ([]frontier.Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	hosts, err := s.allHosts(ctx)
	if err != nil {
		return nil, err
	}
	nums := slices.Sorted(maps.Keys(hosts))
	afterNum, afterSeq := splitID(max(after, 0))
	var out []frontier.Job
	for _, num := range nums {
		if num < afterNum {
			continue
		}
		min := "-inf"
		if num == afterNum {
			min = "(" + strconv.FormatInt(afterSeq, 10)
		}
		host := hosts[num]
		keys := s.hostKeys(host)
		ids, err := s.rdb.ZRangeArgs(ctx, goredis.ZRangeArgs{Key: keys[3], Start: min, Stop: "+inf", ByScore: true,
			Count: int64(limit - len(out))}).Result()
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			continue
		}
		recs, err := s.rdb.HMGet(ctx, keys[0], ids...).Result()
		if err != nil {
			return nil, err
		}
		for i, id := range ids {
			rec, _ := recs[i].(string)
			j, err := decJob(host, num, id, rec)
			if err != nil {
				return nil, err
			}
			out = append(out, j)
		}
		if len(out) >= limit {
			break
		}
	}
	return out, nil
}

// Recover returns every leased job of the crawl to the queue. Call it only
// when no worker of the crawl is alive: it takes their leases too.
func (s *Store) Recover(ctx context.Context, now time.Time) (int, error) {
	hosts, err := s.allHosts(ctx)
	if err != nil {
		return 0, err
	}
	total := 0
	var reps []report
	for _, h := range hosts {
		res, err := recoverScript.Run(ctx, s.rdb, s.hostKeys(h), msUp(now)).Int64Slice()
		if err != nil {
			return total, err
		}
		total += int(res[0])
		reps = append(reps, report{host: h, next: res[1], v: res[2]})
	}
	s.mu.Lock()
	clear(s.held)
	s.mu.Unlock()
	return total, s.schedule(ctx, reps)
}

// Repair rebuilds the schedule from every host's own state: after a worker
// died between a host's change and the schedule's update, a host with work
// may be missing from it. The keep-alive loop runs it after an outage.
func (s *Store) Repair(ctx context.Context) error {
	hosts, err := s.allHosts(ctx)
	if err != nil {
		return err
	}
	reps, err := s.peek(ctx, slices.Collect(maps.Values(hosts)))
	if err != nil {
		return err
	}
	return s.schedule(ctx, reps)
}

// Outages.

func (s *Store) isDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

// backGrace is how long a Store that saw Redis come back waits before it
// claims: the other workers' keep-alives (every, the same for all) notice
// within one, and replay what they journaled. Claiming at once took jobs
// whose leases had run out during the outage though their workers had
// finished them in their journals: after a 20-s outage, 104 of 600 URLs
// were fetched twice.
func backGrace(every time.Duration) time.Duration { return every + every/2 }

// claimPaused reports whether claims wait: Redis is away, or came back a
// moment ago (backGrace).
func (s *Store) claimPaused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down || time.Now().Before(s.claimFrom)
}

// Holding says why claims wait, "" when they do not (fetch.Holder): Redis
// is away, or came back a moment ago.
func (s *Store) Holding() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.down:
		return "Redis is unreachable: nothing is claimed until it returns (finished URLs go to the journal)"
	case time.Now().Before(s.claimFrom):
		return "Redis came back a moment ago: claims wait for the other workers' journals"
	}
	return ""
}

func (s *Store) setDown(err error) {
	s.mu.Lock()
	was := s.down
	s.down = true
	s.mu.Unlock()
	switch {
	case was:
	case errors.Is(err, context.Canceled):
		// The call was given up (the run stopping), not Redis: what
		// it carried goes to the journal all the same, but this is no
		// outage to warn of (it was said as one, Redis up).
		s.log.Info("frontier: a Redis call was cancelled (the run is stopping); what it carried goes to the local journal", "err", err)
	default:
		s.log.Warn("frontier: Redis unreachable; settling to the local journal until it returns", "err", err)
	}
}

// readErr turns an outage into "no work now" for the claiming calls when a
// journal is kept (the engine waits and asks again), and passes other
// errors on.
func (s *Store) readErr(err error) error {
	if err != nil && unavailable(err) && s.journal != nil {
		s.setDown(err)
		return nil
	}
	return err
}

type journalEntry struct {
	Op   string `json:"op"`
	ID   int64  `json:"id"`
	Seq  int64  `json:"seq"`
	Args []any  `json:"args,omitempty"`
	// Epoch is the crawl's incarnation the entry belongs to ("": not
	// known when it was written, or written by an older exitgate).
	Epoch string `json:"epoch,omitempty"`
}

func (s *Store) journalOp(op string, l frontier.Lease, args []any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := json.Marshal(journalEntry{Op: op, ID: l.ID, Seq: l.Seq, Args: args, Epoch: s.epoch})
	if err != nil {
		return err
	}
	if s.journal == nil {
		return frontier.ErrClosed
	}
	if op != "extend" {
		delete(s.held, l.ID)
		delete(s.lost, l.ID)
	}
	if _, err := s.journal.Write(append(b, '\n')); err != nil {
		return err
	}
	if err := s.journal.Sync(); err != nil {
		return err
	}
	// An entry is replayed only by a Store that is down: one written after
	// recover found the journal empty (its caller saw the outage a moment
	// before) or after a failed lookup of its host keeps it down until the
	// next tick replays it.
	s.down = true
	s.countJournaled(op, args)
	return nil
}

// countJournaled moves a journaled settle in the last counts read, so that
// the counts a worker reads while Redis is away (its progress line, its
// summary if Redis never returns) include what it finished meanwhile: they
// stood still at the outage's start (15 done in a summary whose results
// held 127). The next reading from Redis replaces them. Its lock is held.
func (s *Store) countJournaled(op string, args []any) {
	c := &s.counts
	switch op {
	case "done":
		c.Done++
	case "abandon":
		c.Abandoned++
		if len(args) > 1 {
			if why, ok := args[1].(string); ok {
				m := maps.Clone(c.AbandonedByReason) // the map read last may be a caller's too
				if m == nil {
					m = map[string]int{}
				}
				m[why]++
				c.AbandonedByReason = m
			}
		}
	case "retry", "release":
		c.Queued++
	case "park":
		c.Parked++
	default:
		return
	}
	c.Leased = max(0, c.Leased-1)
}

// Replay applies the journal to Redis and empties it; it returns how many
// entries it applied. Entries whose lease was lost are dropped: another
// worker decides those jobs now. Entries journaled while it runs stay for
// the next replay.
func (s *Store) Replay(ctx context.Context) (int, error) {
	s.mu.Lock()
	if s.journal == nil {
		s.mu.Unlock()
		return 0, nil
	}
	fi, err := s.journal.Stat()
	if err != nil {
		s.mu.Unlock()
		return 0, err
	}
	size := fi.Size()
	data := make([]byte, size)
	_, err = s.journal.ReadAt(data, 0)
	s.mu.Unlock()
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	epoch, err := s.rdb.Get(ctx, s.crawlKey("epoch")).Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return 0, err // the journal stays
	}
	n, other := 0, 0
	for _, line := range strings.Split(string(data), "\n") {
		var e journalEntry
		if json.Unmarshal([]byte(line), &e) != nil || e.Op == "extend" {
			continue // a line cut short by a crash, or nothing to replay
		}
		if e.Epoch != "" && e.Epoch != epoch {
			other++ // another incarnation's: its job numbers name other URLs now
			continue
		}
		if err := s.replayOne(ctx, e); err != nil {
			return n, err // the journal stays; replaying it again is harmless
		}
		n++
	}
	if other > 0 {
		s.log.Warn("frontier: journal entries of an earlier crawl under this name dropped: the crawl was seeded again since (its keys lost), and they name other URLs now",
			"crawl", s.cfg.Crawl, "entries", other)
	}
	if epoch != "" {
		s.mu.Lock()
		s.epoch = epoch
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journal == nil {
		return n, frontier.ErrClosed
	}
	fi, err = s.journal.Stat()
	if err != nil {
		return n, err
	}
	tail := make([]byte, fi.Size()-size)
	if _, err := s.journal.ReadAt(tail, size); err != nil && !errors.Is(err, io.EOF) {
		return n, err
	}
	if err := s.journal.Truncate(0); err != nil {
		return n, err
	}
	if _, err := s.journal.Write(tail); err != nil {
		return n, err
	}
	return n, s.journal.Sync()
}

func (s *Store) replayOne(ctx context.Context, e journalEntry) error {
	host, err := s.hostOf(ctx, e.ID)
	if err != nil || host == "" {
		return err
	}
	args := make([]any, len(e.Args))
	for i, a := range e.Args {
		if f, ok := a.(float64); ok {
			a = strconv.FormatFloat(f, 'f', -1, 64)
		}
		args[i] = a
	}
	_, seq := splitID(e.ID)
	all := append([]any{e.Op, member(seq), strconv.FormatInt(e.Seq, 10), "1"}, args...)
	res, err := settleScript.Run(ctx, s.rdb, s.hostKeys(host), all...).Int64Slice()
	if err != nil {
		return err
	}
	if res[0] == 0 && (e.Op == "retry" || e.Op == "park" || e.Op == "release") {
		return s.schedule(ctx, []report{{host: host, next: res[1], v: res[2]}})
	}
	return nil
}

// keep extends held leases every LeaseTTL/3 and, after an outage, replays
// the journal and repairs the schedule as soon as Redis answers.
func (s *Store) keep() {
	defer close(s.done)
	every := keepEvery(s.cfg.LeaseTTL)
	t := time.NewTicker(every)
	defer t.Stop()
	ctx := context.Background()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if s.isDown() {
			n, err := s.recover(ctx)
			if errors.Is(err, errNoAnswer) {
				continue
			}
			if err != nil {
				s.log.Warn("frontier: Redis answers again but the journal could not be replayed yet", "err", err)
				continue
			}
			s.log.Warn("frontier: Redis is back; journal replayed", "entries", n)
		}
		if err := s.extendHeld(ctx, time.Now()); err != nil && unavailable(err) && s.journal != nil {
			s.setDown(err)
		}
		s.mu.Lock()
		noEpoch := s.epoch == ""
		s.mu.Unlock()
		if noEpoch && !s.isDown() {
			s.loadEpoch(ctx) // a joiner's: read once the seeder set it
		}
	}
}

// keepEvery is how often the keep-alive loop runs for a lease TTL.
func keepEvery(ttl time.Duration) time.Duration { return max(ttl/3, 50*time.Millisecond) }

// closeReplayTimeout bounds Close's last replay of the journal.
const closeReplayTimeout = 5 * time.Second

// journaledSettles counts the journal's entries that settle a job (not its
// lease extensions): what Redis does not know yet.
func (s *Store) journaledSettles() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journal == nil {
		return 0
	}
	fi, err := s.journal.Stat()
	if err != nil || fi.Size() == 0 {
		return 0
	}
	data := make([]byte, fi.Size())
	if _, err := s.journal.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return 0
	}
	n := 0
	for line := range strings.SplitSeq(string(data), "\n") {
		var e journalEntry
		if json.Unmarshal([]byte(line), &e) == nil && e.Op != "extend" {
			n++
		}
	}
	return n
}

// openReplayTimeout bounds New's replay of a journal an earlier run left.
const openReplayTimeout = 5 * time.Second

// errNoAnswer: Redis did not answer a ping; still away.
var errNoAnswer = errors.New("redis does not answer")

// recover ends an outage once Redis answers: the journal is replayed, the
// schedule repaired, and claims wait a backGrace more. It returns how many
// entries it replayed.
func (s *Store) recover(ctx context.Context) (int, error) {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return 0, fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	n, err := s.Replay(ctx)
	if err == nil {
		err = s.Repair(ctx)
	}
	if err != nil {
		return n, err
	}
	// Settles made meanwhile were journaled behind the replay (the Store
	// is down until here): replay them too, and leave the outage only with
	// the journal empty, under the lock journalOp writes under. Left in
	// the journal until the next outage, their leases no longer kept
	// alive, their URLs were fetched again by other workers.
	for range 8 {
		s.mu.Lock()
		empty := s.journal == nil
		if !empty {
			fi, err := s.journal.Stat()
			if err != nil {
				s.mu.Unlock()
				return n, err
			}
			empty = fi.Size() == 0
		}
		if empty {
			s.down = false
			s.claimFrom = time.Now().Add(backGrace(keepEvery(s.cfg.LeaseTTL)))
			s.mu.Unlock()
			return n, nil
		}
		s.mu.Unlock()
		k, err := s.Replay(ctx)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, errJournalGrowing
}

// errJournalGrowing: settles kept coming into the journal faster than it
// was replayed; the Store stays down and the next tick replays again.
var errJournalGrowing = errors.New("frontier/redis: the journal grew during each of 8 replays; still settling to it")

// extendHeld moves every lease this Store holds to now+LeaseTTL, one script
// per host.
//
// A lease it finds no longer held under its claim (the keep-alive could not
// reach Redis for longer than the lease, or the worker stalled that long,
// and another worker claimed the job) is lost: it is no longer kept, and
// LeaseLost says so to the Core that buffered the job, so that two workers
// do not both fetch it.
func (s *Store) extendHeld(ctx context.Context, now time.Time) error {
	s.mu.Lock()
	byHost := map[string][]frontier.Lease{}
	for id, h := range s.held {
		byHost[h.host] = append(byHost[h.host], frontier.Lease{ID: id, Seq: h.seq})
	}
	s.mu.Unlock()
	until := msUp(now) + s.ttlMs
	var reps []report
	for host, leases := range byHost {
		args := []any{until}
		for _, l := range leases {
			_, seq := splitID(l.ID)
			args = append(args, member(seq), strconv.FormatInt(l.Seq, 10))
		}
		res, err := extendManyScript.Run(ctx, s.rdb, s.hostKeys(host), args...).Int64Slice()
		if err != nil {
			return err
		}
		reps = append(reps, report{host: host, next: res[1], v: res[2]})
		if len(res) > 3 {
			s.markLost(leases, res[3:])
		}
	}
	return s.schedule(ctx, reps)
}

// markLost records as lost the leases at idx in ls that this Store still
// holds under the same claim (one settled meanwhile is not lost, only
// done).
func (s *Store) markLost(ls []frontier.Lease, idx []int64) {
	s.mu.Lock()
	n := 0
	for _, i := range idx {
		if i < 0 || i >= int64(len(ls)) {
			continue
		}
		l := ls[i]
		if h, ok := s.held[l.ID]; ok && h.seq == l.Seq {
			delete(s.held, l.ID)
			s.lost[l.ID] = l.Seq
			n++
		}
	}
	s.mu.Unlock()
	if n > 0 {
		s.log.Warn("frontier: leases lost (not kept alive in time; another worker may hold their jobs now)", "leases", n)
	}
}

// LeaseLost reports whether the keep-alive found lease l lost
// (frontier.LeaseWatcher): the job is another worker's now, and the caller
// must not fetch it. It reports a lost lease once.
func (s *Store) LeaseLost(l frontier.Lease) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq, ok := s.lost[l.ID]; ok && seq == l.Seq {
		delete(s.lost, l.ID)
		return true
	}
	return false
}

// Held returns how many leases this Store holds and keeps alive.
func (s *Store) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

var _ frontier.Frontier = (*Store)(nil)
