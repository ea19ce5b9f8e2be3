package limit

import (
	"math"
	"time"
)

// Change is one decision of a learning rule: what changed, on which lane (or
// the whole host when Lane is empty), from what to what, and why. The last
// Config.Changes records of each host are kept for Snapshot; every record is
// logged at debug level.
type Change struct {
	At   time.Time `json:"at"`
	Host string    `json:"host"`
	Lane string    `json:"lane,omitempty"`
	// Rule names the rule that decided (see the package doc for the order).
	Rule string `json:"rule"`
	// What names the quantity: "pace", "follow", "ceiling", "floor",
	// "estimate", "count", "burst" (requests beyond the rate), "hold" (the
	// explorer holds its pace until the host can afford a step: From 0,
	// To the pace), "phase" (0 ramp, 1 refine, 2 bisect, 3 settled),
	// "scope" (Scope values), "host-rate", "cooldown", "pause", "ban".
	What string `json:"what"`
	// From and To are rates in requests per second, or seconds for
	// cooldowns, pauses and bans; for scope, the Scope values.
	From float64 `json:"from"`
	To   float64 `json:"to"`
	Why  string  `json:"why"`
}

// changeLog keeps a host's last changes in a ring, and the records of the
// operation in progress for the caller to log once the shard lock is
// released.
type changeLog struct {
	ring []Change
	next int
	full bool
	op   []Change
}

// note records one change made at now (Unix ns). Changes of less than the
// tolerance are not news and are dropped.
func (h *host) note(r *rules, now int64, rule, lane, what string, from, to float64, why string) {
	if from == to || (from > 0 && math.Abs(to-from) <= tolerance*from) {
		return
	}
	c := Change{At: time.Unix(0, now).UTC(), Host: h.name, Lane: lane, Rule: rule, What: what, From: round3(from), To: round3(to), Why: why}
	lg := &h.log
	if lg.ring == nil {
		lg.ring = make([]Change, r.changes)
	}
	lg.ring[lg.next] = c
	lg.next++
	if lg.next == len(lg.ring) {
		lg.next, lg.full = 0, true
	}
	lg.op = append(lg.op, c)
}

// recent returns the kept changes, oldest first.
func (lg *changeLog) recent() []Change {
	if !lg.full {
		return append([]Change(nil), lg.ring[:lg.next]...)
	}
	out := make([]Change, 0, len(lg.ring))
	out = append(out, lg.ring[lg.next:]...)
	return append(out, lg.ring[:lg.next]...)
}

// takeOp returns and clears the changes of the operation in progress.
func (lg *changeLog) takeOp() []Change {
	op := lg.op
	lg.op = nil
	return op
}
