package limit

import (
	"math"
	"slices"
	"strings"
	"time"
)

// Snapshot is a JSON-friendly copy of the limiter's state at one instant.
type Snapshot struct {
	At       time.Time      `json:"at"`
	InFlight int            `json:"in_flight"`
	Hosts    []HostSnapshot `json:"hosts"`
	Exits    []ExitSnapshot `json:"exits"`
}

// Counters count settled requests on a host.
type Counters struct {
	Requests      uint64 `json:"requests"`
	OK            uint64 `json:"ok"`
	Throttled     uint64 `json:"throttled"`
	Busy          uint64 `json:"busy"`
	Errors        uint64 `json:"errors"`
	Banned        uint64 `json:"banned"`
	ProxyFailures uint64 `json:"proxy_failures"`
	Fatal         uint64 `json:"fatal"`
	// Forbidden counts bare 403s; only a wave of them bans a lane.
	Forbidden uint64 `json:"forbidden"`
	Canceled  uint64 `json:"canceled"`
	// Abandoned counts requests sent whose answer was never heard (the
	// caller gave up): in Requests, their tokens spent, nothing learned.
	Abandoned uint64 `json:"abandoned,omitempty"`
	// ThrottledNs is the total cooldown and pause time imposed, in ns.
	ThrottledNs int64 `json:"throttled_ns"`
}

// HostSnapshot is one host's state.
type HostSnapshot struct {
	Host string `json:"host"`
	// Scope is where the host limits: inferred from 429 correlation, or
	// declared by headers (ScopeHinted).
	Scope       Scope `json:"scope"`
	ScopeHinted bool  `json:"scope_hinted,omitempty"`
	// Phase is how far the host's lanes got in learning one lane's budget:
	// "ramp", "probe", "settled", or "declared" (the server said) and
	// "shared" (the host's own rate governs).
	Phase string `json:"phase"`
	// LaneRate is the pace the host's lanes follow; LaneFloor and
	// LaneCeiling bracket one lane's budget (zero = unknown).
	LaneRate    Rate `json:"lane_rate"`
	LaneFloor   Rate `json:"lane_floor"`
	LaneCeiling Rate `json:"lane_ceiling"`
	// Explorer is the lane that explores for the host.
	Explorer string `json:"explorer,omitempty"`
	// Rate is the host's own rate; zero while lanes govern.
	Rate        Rate      `json:"rate"`
	Ceiling     Rate      `json:"ceiling"`
	SendRate    Rate      `json:"send_rate"` // measured over the last ~10s span
	PausedUntil time.Time `json:"paused_until,omitzero"`
	// Wall is when the host's lanes met a window's quota spent together
	// (they wait while one of them retries, limit/wall.go), or the lane
	// that met it first is stuck and the others wait at its count; zero:
	// none.
	Wall     time.Time      `json:"wall,omitzero"`
	InFlight int            `json:"in_flight"`
	Counters Counters       `json:"counters"`
	Lanes    []LaneSnapshot `json:"lanes"`
	// Changes are the host's last learning decisions, oldest first.
	Changes []Change `json:"changes,omitempty"`
}

// LaneSnapshot is one (host, exit) lane's state.
type LaneSnapshot struct {
	Exit string `json:"exit"`
	// Rate is the lane's pace; Ceiling its own ceiling when its IP has a
	// smaller budget than the host's other lanes (zero = none).
	Rate          Rate      `json:"rate"`
	Ceiling       Rate      `json:"ceiling"`
	Declared      bool      `json:"declared,omitempty"` // a declared quota set Rate
	Tokens        float64   `json:"tokens"`
	ReadyAt       time.Time `json:"ready_at,omitzero"`
	CooldownUntil time.Time `json:"cooldown_until,omitzero"`
	BannedUntil   time.Time `json:"banned_until,omitzero"`
	Remaining     float64   `json:"remaining,omitempty"` // of a declared window
	ResetAt       time.Time `json:"reset_at,omitzero"`
	InFlight      int       `json:"in_flight"`
	Requests      uint64    `json:"requests"`
	OK            uint64    `json:"ok"`
	Throttled     uint64    `json:"throttled"`
	Errors        uint64    `json:"errors"`
	Bans          uint64    `json:"bans"`
	ProxyFailures uint64    `json:"proxy_failures"`
	// ThrottledSeconds is the cooldown time 429s imposed on the lane.
	ThrottledSeconds float64 `json:"throttled_seconds"`
	// EarlyWarning: this lane's rate is below Config.EarlyWarning times the
	// median of its host's lanes, an early reputation signal for the exit.
	EarlyWarning bool `json:"early_warning,omitempty"`
}

// ExitCounters count exit-level events.
type ExitCounters struct {
	ProxyFailures uint64 `json:"proxy_failures"`
	Quarantines   uint64 `json:"quarantines"`
	Probes        uint64 `json:"probes"`
}

// ExitSnapshot is one exit's state across hosts.
type ExitSnapshot struct {
	ID               string       `json:"id"`
	Healthy          bool         `json:"healthy"`
	Failures         int          `json:"failures"`
	Probing          bool         `json:"probing,omitempty"`
	QuarantinedUntil time.Time    `json:"quarantined_until,omitzero"`
	ReadyAt          time.Time    `json:"ready_at,omitzero"`
	Rate             Rate         `json:"rate"` // provider limit
	InFlight         int          `json:"in_flight"`
	Counters         ExitCounters `json:"counters"`
	// Requests, OK and Throttled sum this exit's lanes over all hosts.
	Requests  uint64 `json:"requests"`
	OK        uint64 `json:"ok"`
	Throttled uint64 `json:"throttled"`
	// Warnings lists hosts where this exit's lane has an early warning.
	Warnings []string `json:"warnings,omitempty"`
}

// Snapshot returns the state of every host, lane and exit at now, with exit
// counters summed over lanes and early warnings attached to exits. It costs
// O(lanes log lanes): for dashboards and reports, not for every request.
func (l *Limiter) Snapshot(now time.Time) Snapshot {
	l.mustBeNew()
	now = sane(now)
	r := l.rules
	s := Snapshot{At: now, InFlight: int(l.inFlight.Load())}
	for i := range l.tab.shards {
		sh := &l.tab.shards[i]
		sh.mu.Lock()
		for _, h := range sh.hosts {
			s.Hosts = append(s.Hosts, r.snapshotHost(h, now))
		}
		sh.mu.Unlock()
	}
	l.tab.exMu.RLock()
	for _, e := range l.tab.exits {
		s.Exits = append(s.Exits, e.snapshot(r, now))
	}
	l.tab.exMu.RUnlock()
	slices.SortFunc(s.Hosts, func(a, b HostSnapshot) int { return strings.Compare(a.Host, b.Host) })
	slices.SortFunc(s.Exits, func(a, b ExitSnapshot) int { return strings.Compare(a.ID, b.ID) })
	byID := make(map[string]*ExitSnapshot, len(s.Exits))
	for i := range s.Exits {
		byID[s.Exits[i].ID] = &s.Exits[i]
	}
	for _, h := range s.Hosts {
		for _, ln := range h.Lanes {
			e := byID[ln.Exit]
			if e == nil {
				continue
			}
			e.Requests += ln.Requests
			e.OK += ln.OK
			e.Throttled += ln.Throttled
			if ln.EarlyWarning {
				e.Warnings = append(e.Warnings, h.Host)
			}
		}
	}
	return s
}

// phase names how a host's lanes are governed.
func (h *host) phase() string {
	switch {
	case h.scope.shared():
		return "shared"
	case h.cap.declared > 0:
		return "declared"
	}
	return phaseNames[h.exp.phase]
}

func (r *rules) snapshotHost(h *host, now time.Time) HostSnapshot {
	n := now.UnixNano()
	hs := HostSnapshot{
		Host:        h.name,
		Scope:       h.scope,
		ScopeHinted: h.hinted,
		Phase:       h.phase(),
		LaneRate:    rateFromPerSecond(h.followPace(r)),
		LaneFloor:   rateFromPerSecond(h.cap.lo),
		LaneCeiling: rateFromPerSecond(h.cap.hi),
		InFlight:    int(h.inFlight),
		Counters:    h.c,
		SendRate:    rateFromPerSecond(h.send.rate),
		Lanes:       make([]LaneSnapshot, 0, len(h.lanes)),
		Changes:     h.log.recent(),
	}
	if h.exploring() {
		hs.Explorer = h.exp.exit
	}
	if r.ceiling > 0 {
		hs.Ceiling = rateFromPerSecond(r.ceiling)
	}
	if h.rated() {
		hs.Rate = rateFromPerSecond(h.rate.now)
	}
	if h.pause > n {
		hs.PausedUntil = time.Unix(0, h.pause).UTC()
	}
	if w := h.wall; w != nil && w.waiting() {
		hs.Wall = time.Unix(0, w.start).UTC()
	}
	paces := make([]float64, 0, len(h.lanes))
	for _, l := range h.lanes {
		ls := LaneSnapshot{
			Exit:      l.exit,
			Rate:      rateFromPerSecond(l.pace),
			Ceiling:   rateFromPerSecond(l.own()),
			Declared:  l.q.rate() > 0,
			InFlight:  int(l.inFlight),
			Requests:  uint64(l.c.req),
			OK:        uint64(l.c.ok),
			Throttled: uint64(l.c.thr),

			ThrottledSeconds: float64(l.c.coolMs) / 1e3,
		}
		if x := l.x; x != nil {
			ls.Errors, ls.Bans, ls.ProxyFailures = uint64(x.c.err), uint64(x.c.ban), uint64(x.c.fail)
		}
		iv := interval(l.pace)
		tau := r.tau(l.pace)
		burst := float64(tau+iv) / float64(iv)
		ls.Tokens = math.Max(0, math.Min(burst, float64(n-(l.tat-tau-iv))/float64(iv)))
		if t := r.laneReady(l); t > n {
			ls.ReadyAt = time.Unix(0, t).UTC()
		}
		if l.cool > n {
			ls.CooldownUntil = time.Unix(0, l.cool).UTC()
		}
		if l.ban > n {
			ls.BannedUntil = time.Unix(0, l.ban).UTC()
		}
		if q := l.q; q != nil && q.reset > n {
			ls.Remaining, ls.ResetAt = q.rem, time.Unix(0, q.reset).UTC()
		}
		hs.Lanes = append(hs.Lanes, ls)
		if l.c.req > 0 {
			paces = append(paces, l.pace)
		}
	}
	slices.SortFunc(hs.Lanes, func(a, b LaneSnapshot) int { return strings.Compare(a.Exit, b.Exit) })
	if len(paces) >= 3 {
		slices.Sort(paces)
		med := paces[len(paces)/2]
		for i := range hs.Lanes {
			ls := &hs.Lanes[i]
			if ls.Requests > 0 && !atLeast(ls.Rate.Hz(), r.earlyWarning*med) {
				ls.EarlyWarning = true
			}
		}
	}
	return hs
}
