package monitor

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Config configures a Monitor. The zero value of every field means its
// documented default; New validates the whole struct once.
type Config struct {
	// Budget is the share of a host's responses that may be 429 over
	// Window. Default 0.01 (the article's illustrative 1%).
	Budget float64
	// Budgets overrides Budget per host (the limiter's host key, such as
	// "api.example.com" or "127.0.0.1:8080").
	Budgets map[string]float64
	// Window is the span of the rolling 429 ratio. Default 1 minute.
	Window time.Duration
	// MinThrottled is how many 429s a host must draw within Window before it
	// can be over budget, so that one 429 among few requests is not an
	// alert. Default 3.
	MinThrottled int
	// AlertAfter is how long a host stays over budget before an alert.
	// Default 3 minutes.
	AlertAfter time.Duration
	// BreakAfter is how long a host stays over budget before its circuit
	// breaker opens. Default AlertAfter + 2 minutes. Negative: no breaker.
	BreakAfter time.Duration
	// Cooldown is how long an open breaker parks the host before a probe;
	// it doubles with each failed probe, up to CooldownMax. Defaults 5
	// minutes and 1 hour.
	Cooldown, CooldownMax time.Duration
	// ProbeRecheck is when a half-open host's other requests ask again
	// while its probe is out. Default 1 second.
	ProbeRecheck time.Duration

	// SpikeShare and SpikeMinHosts: a spike is at least SpikeMinHosts hosts
	// over budget at once that make up at least SpikeShare of the hosts
	// that answered within Window. Defaults 0.5 and 3.
	SpikeShare    float64
	SpikeMinHosts int
	// JumpFactor and JumpMin: a Retry-After jump is a Retry-After at least
	// JumpFactor times the host's usual one and at least JumpMin. Defaults
	// 10 and 10 minutes.
	JumpFactor float64
	JumpMin    time.Duration
	// FallShare and FallSpan: a falling equilibrium is a host's learned
	// capacity below 1-FallShare of its peak over the last FallSpan.
	// Defaults 0.25 and 10 minutes.
	FallShare float64
	FallSpan  time.Duration

	// FlagShare: a lane drawing 429s while paced at or under this share of
	// its peers' median pace flags its exit on that host. Default 0.6
	// ("about half", with room for the limiter settling a few percent
	// under a limit).
	FlagShare float64
	// FlagWindow is how recent a 429 must be to flag, or to keep flagged.
	// Default 5 minutes.
	FlagWindow time.Duration
	// QuarantineAfter: an exit still flagged and drawing 429s this long
	// after it was flagged is quarantined for the host. Default 2 minutes,
	// so that one bad exit is held back before its 429s open the host's
	// breaker (BreakAfter).
	QuarantineAfter time.Duration
	// QuarantineFor is the first quarantine's length; each repeat doubles
	// it, up to QuarantineMax. Defaults 30 minutes and 6 hours.
	QuarantineFor, QuarantineMax time.Duration

	// Every is how often Run evaluates (and the dashboard's history step).
	// Default 1 second.
	Every time.Duration
	// History is how many points of each host's history the dashboard
	// keeps. Default 900 (15 minutes at one a second).
	History int
	// MaxHosts and MaxExits bound the hosts and exits Status lists (the
	// busiest, plus every one with an alert or a flag). Defaults 50 and 100.
	MaxHosts, MaxExits int
	// Events is how many events are kept for Status and the summary.
	// Default 200.
	Events int
	// Logger receives alerts and warnings at WARN, recoveries at INFO; nil
	// discards.
	Logger *slog.Logger
}

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("invalid monitor config")

// DefaultBudget is Config.Budget's default.
const DefaultBudget = 0.01

func (c Config) withDefaults() (Config, error) {
	var err error
	fail := func(field string, v any) {
		if err == nil {
			err = fmt.Errorf("%w: %s %v", ErrConfig, field, v)
		}
	}
	share := func(field string, v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
		if !(*v > 0 && *v < 1) || math.IsNaN(*v) {
			fail(field, fmt.Sprintf("%v: want a share between 0 and 1", *v))
		}
	}
	dur := func(field string, v *time.Duration, def time.Duration) {
		if *v < 0 {
			fail(field, fmt.Sprintf("%v is negative", *v))
		}
		if *v <= 0 {
			*v = def
		}
	}
	count := func(field string, v *int, def int) {
		if *v < 0 {
			fail(field, fmt.Sprintf("%d is negative", *v))
		}
		if *v <= 0 {
			*v = def
		}
	}
	share("Budget", &c.Budget, DefaultBudget)
	for h, b := range c.Budgets {
		if !(b > 0 && b < 1) {
			fail("Budgets["+h+"]", fmt.Sprintf("%v: want a share between 0 and 1", b))
		}
	}
	dur("Window", &c.Window, time.Minute)
	count("MinThrottled", &c.MinThrottled, 3)
	dur("AlertAfter", &c.AlertAfter, 3*time.Minute)
	if c.BreakAfter == 0 {
		c.BreakAfter = c.AlertAfter + 2*time.Minute
	}
	dur("Cooldown", &c.Cooldown, 5*time.Minute)
	dur("CooldownMax", &c.CooldownMax, time.Hour)
	dur("ProbeRecheck", &c.ProbeRecheck, time.Second)
	share("SpikeShare", &c.SpikeShare, 0.5)
	count("SpikeMinHosts", &c.SpikeMinHosts, 3)
	if c.JumpFactor == 0 {
		c.JumpFactor = 10
	}
	if !(c.JumpFactor > 1) {
		fail("JumpFactor", fmt.Sprintf("%v: want above 1", c.JumpFactor))
	}
	dur("JumpMin", &c.JumpMin, 10*time.Minute)
	share("FallShare", &c.FallShare, 0.25)
	dur("FallSpan", &c.FallSpan, 10*time.Minute)
	share("FlagShare", &c.FlagShare, 0.6)
	dur("FlagWindow", &c.FlagWindow, 5*time.Minute)
	dur("QuarantineAfter", &c.QuarantineAfter, 2*time.Minute)
	dur("QuarantineFor", &c.QuarantineFor, 30*time.Minute)
	dur("QuarantineMax", &c.QuarantineMax, 6*time.Hour)
	dur("Every", &c.Every, time.Second)
	count("History", &c.History, 900)
	count("MaxHosts", &c.MaxHosts, 50)
	count("MaxExits", &c.MaxExits, 100)
	count("Events", &c.Events, 200)
	switch {
	case err != nil:
	case c.CooldownMax < c.Cooldown:
		fail("CooldownMax", "is below Cooldown")
	case c.QuarantineMax < c.QuarantineFor:
		fail("QuarantineMax", "is below QuarantineFor")
	case c.BreakAfter > 0 && c.BreakAfter < c.AlertAfter:
		fail("BreakAfter", "is below AlertAfter: the alert comes first")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, err
}

// budget is host's 429 budget.
func (c *Config) budget(host string) float64 {
	if b, ok := c.Budgets[host]; ok {
		return b
	}
	return c.Budget
}
