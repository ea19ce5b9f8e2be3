// Package monitor watches a crawl and acts on what the 429 article's
// monitoring section asks for: a 429 budget per host with alerts, a circuit
// breaker per host, a spike across hosts reported as a change on our side,
// early warnings (Retry-After jumps, a falling equilibrium) and the
// reputation of each exit on each host.
//
// It observes through public APIs only: every request's metrics.Event (a
// Tally subscription, Record), the limiter's Snapshot with its change
// records, the frontier's counts and the engine's parked hosts. It acts
// through three hooks: Gate wraps the engine's limiter (an open breaker
// refuses the host's requests, a half-open one lets one probe through),
// Sources.Park parks a host's jobs durably (fetch.Core.ParkHost) and
// Sources.Quarantine holds one exit back from one host
// (limit.Limiter.Quarantine).
//
// # Rules
//
//   - Budget: a host is over budget while, over the last Config.Window, more
//     than its budget (Config.Budget, 1% by default, or Config.Budgets[host])
//     of its responses were 429 and at least Config.MinThrottled were,
//     leaving out the responses of its exits held back (quarantined by the
//     reputation rule or banned by the host: handled, not the host's). An
//     episode over budget ends once the host has stayed within budget for a
//     whole Window. After Config.AlertAfter (3 minutes) over budget: an
//     alert (a WARN log line, an Event, a metric).
//   - Breaker: after Config.BreakAfter over budget (5 minutes) the host's
//     breaker opens: its jobs are parked durably until the cool-down
//     (Config.Cooldown, 5 minutes) is over; none is abandoned, and the other
//     hosts go on. Then it is half-open: one request goes, the probe. A
//     success closes it; a 429, a 503 or a ban opens it again for twice the
//     cool-down (up to Config.CooldownMax); any other answer lets another
//     probe go.
//   - Spike: when at least Config.SpikeMinHosts hosts and Config.SpikeShare
//     of the hosts answering are over budget at once, the 429s are most
//     likely our change (concurrency, exits, a deploy), not the sites'.
//   - Retry-After jump: a Retry-After at least Config.JumpFactor times the
//     host's usual one (the median of its recent ones) and at least
//     Config.JumpMin: a burst limit became a longer quota.
//   - Falling equilibrium: a host's learned capacity falls below
//     1-Config.FallShare of its peak within Config.FallSpan.
//   - Reputation: an exit whose lane draws 429s while paced at or under
//     Config.FlagShare of its peers' median pace on the same host (the
//     article: at about half its usual capacity) is flagged; if it is still
//     flagged and draws another 429 Config.QuarantineAfter later, it is
//     quarantined for that host for Config.QuarantineFor (doubling on each
//     repeat). A lane the limiter banned (block pages) shows as banned.
//
// Every rule decides at explicit instants (Record's event time, Tick's now),
// so the simulator drives a Monitor in virtual time exactly as a live crawl
// drives it in real time.
package monitor
