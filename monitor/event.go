package monitor

import (
	"context"
	"log/slog"
	"time"
)

// Event is one thing the monitor noticed: an alert, a breaker's move, an
// early warning, an exit's reputation changing, or the end of one of these.
// Events are logged (Level "warn" at WARN, "info" at INFO), kept for Status
// and the summary, and counted in exitgate_monitor_events_total.
type Event struct {
	At    time.Time `json:"at"`
	Kind  string    `json:"kind"`
	Level string    `json:"level"`
	Host  string    `json:"host,omitempty"`
	Exit  string    `json:"exit,omitempty"`
	// Message says what happened and what is done about it, in a line.
	Message string `json:"message"`
	// Value is the figure that decided: a 429 ratio, a Retry-After in
	// seconds, a capacity in requests per second, a share of hosts.
	Value float64 `json:"value,omitempty"`
	// Until is when a breaker's cool-down or a quarantine ends.
	Until time.Time `json:"until,omitzero"`
}

// Event kinds.
const (
	KindOverBudget      = "over_budget"         // warn: a host over its 429 budget for AlertAfter
	KindBudgetOK        = "budget_ok"           // info: back within budget
	KindBreakerOpen     = "breaker_open"        // warn: the host's jobs are parked for a cool-down
	KindBreakerHalfOpen = "breaker_half_open"   // info: one probe may go
	KindBreakerClosed   = "breaker_closed"      // info: the probe succeeded
	KindSpike           = "spike"               // warn: most hosts over budget at once: our change
	KindSpikeOver       = "spike_over"          // info
	KindRetryAfterJump  = "retry_after_jump"    // warn: seconds became hours
	KindRetryAfterBack  = "retry_after_back"    // info
	KindFalling         = "falling_equilibrium" // warn: learned capacity falling
	KindFallingOver     = "equilibrium_steady"  // info: recovered, or settled lower
	KindExitFlagged     = "exit_flagged"        // warn: an exit draws 429s well under its peers
	KindExitQuarantined = "exit_quarantined"    // warn: ... and went on: held back from the host
	KindExitBanned      = "exit_banned"         // warn: the limiter banned the lane (block pages)
	KindExitCleared     = "exit_cleared"        // info
)

// Kinds lists every event kind, warnings first.
var Kinds = []string{
	KindOverBudget, KindBreakerOpen, KindSpike, KindRetryAfterJump, KindFalling,
	KindExitFlagged, KindExitQuarantined, KindExitBanned,
	KindBudgetOK, KindBreakerHalfOpen, KindBreakerClosed, KindSpikeOver,
	KindRetryAfterBack, KindFallingOver, KindExitCleared,
}

// events keeps the last n events in a ring, and counts every kind.
type events struct {
	ring  []Event
	next  int
	full  bool
	count map[string]int64
}

func (e *events) add(ev Event, n int) {
	if e.ring == nil {
		e.ring = make([]Event, n)
		e.count = map[string]int64{}
	}
	e.ring[e.next] = ev
	e.next++
	if e.next == len(e.ring) {
		e.next, e.full = 0, true
	}
	e.count[ev.Kind]++
}

// list returns the kept events, oldest first.
func (e *events) list() []Event {
	if !e.full {
		return append([]Event(nil), e.ring[:e.next]...)
	}
	out := append([]Event(nil), e.ring[e.next:]...)
	return append(out, e.ring[:e.next]...)
}

// emitLocked keeps ev and logs it, timed when it happened (virtual time in
// a simulation).
func (m *Monitor) emitLocked(ev Event) {
	m.ev.add(ev, m.cfg.Events)
	lvl := slog.LevelInfo
	if ev.Level == "warn" {
		lvl = slog.LevelWarn
	}
	ctx := context.Background()
	if !m.log.Enabled(ctx, lvl) {
		return
	}
	rec := slog.NewRecord(ev.At, lvl, "monitor: "+ev.Message, 0)
	rec.AddAttrs(slog.String("kind", ev.Kind))
	if ev.Host != "" {
		rec.AddAttrs(slog.String("host", ev.Host))
	}
	if ev.Exit != "" {
		rec.AddAttrs(slog.String("exit", ev.Exit))
	}
	if !ev.Until.IsZero() {
		rec.AddAttrs(slog.Time("until", ev.Until))
	}
	_ = m.log.Handler().Handle(ctx, rec) // a handler's error is its own; the event is kept anyway
}
