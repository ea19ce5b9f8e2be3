package limit

import (
	"math"
	"slices"
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
	// Rate is the host AIMD rate; zero while the host is not host-scoped
	// (lanes govern then).
	Rate        Rate           `json:"rate"`
	Ceiling     Rate           `json:"ceiling"`
	SendRate    Rate           `json:"send_rate"` // measured over the last ~10s window
	PausedUntil time.Time      `json:"paused_until,omitzero"`
	InFlight    int            `json:"in_flight"`
	Counters    Counters       `json:"counters"`
	Lanes       []LaneSnapshot `json:"lanes"`
}

// LaneSnapshot is one (host, exit) lane's state.
type LaneSnapshot struct {
	Exit string `json:"exit"`
	// Rate is the learned pace; Ceiling the lowest rate that drew a 429;
	// Floor a proven lower bound on the server's rate. Zero = unknown.
	Rate          Rate      `json:"rate"`
	Ceiling       Rate      `json:"ceiling"`
	Floor         Rate      `json:"floor"`
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

// SnapshotHost copies h for a Snapshot, including early warnings for its
// lanes. It costs O(lanes log lanes); snapshots are for dashboards, not for
// every request.
func SnapshotHost(r *Rules, host string, h *HostState, now time.Time) HostSnapshot {
	n := now.UnixNano()
	hs := HostSnapshot{
		Host:        host,
		Scope:       h.scope,
		ScopeHinted: h.hinted,
		InFlight:    int(h.inFlight),
		Counters:    h.c,
		SendRate:    rateFromPerSecond(h.sendRate),
		Lanes:       make([]LaneSnapshot, 0, len(h.lanes)),
	}
	if r.Ceiling > 0 {
		hs.Ceiling = rateFromPerSecond(r.Ceiling)
	}
	if h.rated() {
		hs.Rate = rateFromPerSecond(h.aimd)
	}
	if h.pause > n {
		hs.PausedUntil = time.Unix(0, h.pause).UTC()
	}
	paces := make([]float64, 0, len(h.lanes))
	for _, l := range h.lanes {
		ls := LaneSnapshot{
			Exit:          l.exit,
			Rate:          rateFromPerSecond(l.l.pace),
			Ceiling:       rateFromPerSecond(l.l.hi),
			Floor:         rateFromPerSecond(l.l.lo),
			Declared:      l.l.fixed,
			InFlight:      int(l.inFlight),
			Requests:      uint64(l.c.req),
			OK:            uint64(l.c.ok),
			Throttled:     uint64(l.c.thr),
			Errors:        uint64(l.c.err),
			Bans:          uint64(l.c.ban),
			ProxyFailures: uint64(l.c.fail),

			ThrottledSeconds: float64(l.c.coolMs) / 1e3,
		}
		iv := r.interval(&l.l)
		burst := float64(r.tau(&l.l)+iv) / float64(iv)
		ls.Tokens = math.Max(0, math.Min(burst, float64(n-(l.tat-r.tau(&l.l)-iv))/float64(iv)))
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
			paces = append(paces, l.l.pace)
		}
	}
	slices.SortFunc(hs.Lanes, func(a, b LaneSnapshot) int {
		switch {
		case a.Exit < b.Exit:
			return -1
		case a.Exit > b.Exit:
			return 1
		}
		return 0
	})
	if len(paces) >= 3 {
		slices.Sort(paces)
		med := paces[len(paces)/2]
		for i := range hs.Lanes {
			ls := &hs.Lanes[i]
			if ls.Requests > 0 && ls.Rate.Hz() < r.EarlyWarning*med*0.999 {
				ls.EarlyWarning = true
			}
		}
	}
	return hs
}
