package server

import (
	"fmt"
	"time"
)

// HostileAt is when the hostile scenarios turn, since the start of the
// run. The lockouts last HostileFor, the reputation drop ReputationFor,
// the ban wave BanFor; the halved limit stays.
const (
	HostileAt     = 5 * time.Minute
	HostileFor    = 15 * time.Minute
	ReputationFor = 10 * time.Minute
	BanFor        = 8 * time.Minute
)

// HostileScenarios returns sites that turn hostile mid-run, for the
// monitor (alerts, the circuit breaker, exit reputation) rather than the
// learner: each starts as per-ip-token-bucket (1 r/s per IP, burst 2, bare
// 429s) and turns at HostileAt.
//
//   - hostile-lockout: of three hosts, h2.test allows one request per hour
//     per IP from HostileAt for HostileFor (a lockout the learner cannot
//     pace its way out of), then 1 r/s again.
//   - hostile-limit-halved: the per-IP limit halves at HostileAt, for good.
//   - hostile-reputation: from HostileAt every fourth IP gets a quarter of
//     its peers' budget, for ReputationFor.
//   - hostile-ban-wave: from HostileAt every fourth IP gets block pages
//     (403) for BanFor.
//   - hostile-all-hosts: four hosts lock out at once at HostileAt for
//     HostileFor (as if our side had changed).
//
// Their URL sets keep a 20-exit pool busy past the recovery.
func HostileScenarios() []Scenario {
	base := Policy{Quota: 1, Window: time.Second, Burst: 2}
	locked := Policy{Quota: 1, Window: time.Hour, Burst: 1}
	lockout := []Change{{At: HostileAt, Policy: locked}, {At: HostileAt + HostileFor, Policy: base}}
	site := func(c Config) Config {
		c.Algorithm, c.Latency = TokenBucket, scenarioLatency
		if c.Policy == (Policy{}) {
			c.Policy = base
		}
		return c
	}
	sc := func(name, desc string, c Config, urls int) Scenario {
		c = site(c)
		c.Name = name
		return Scenario{Name: name, Description: desc, Kind: PerIP, Config: c, URLs: urls}
	}
	hosts := func(n int, urls int, lock func(i int) bool) []Host {
		var hs []Host
		for i := 1; i <= n; i++ {
			c := site(Config{Name: fmt.Sprintf("h%d.test", i)})
			if lock(i) {
				c.Schedule = lockout
			}
			hs = append(hs, Host{Name: c.Name, Config: c, URLs: urls})
		}
		return hs
	}
	return []Scenario{
		{Name: "hostile-lockout", Kind: PerIP, Description: "three hosts at 1 r/s per IP; h2.test allows 1 per hour per IP from 5 to 20 minutes",
			Hosts: hosts(3, 12000, func(i int) bool { return i == 2 })},
		sc("hostile-limit-halved", "1 r/s per IP, halved to 1 per 2 s at 5 minutes", Config{
			Schedule: []Change{{At: HostileAt, Policy: Policy{Quota: 1, Window: 2 * time.Second, Burst: 2}}},
		}, 18000),
		sc("hostile-reputation", "1 r/s per IP; from 5 to 15 minutes every fourth IP gets 1 per 4 s", Config{
			Turns: []KeyTurn{{At: HostileAt, For: ReputationFor, Every: 4, Policy: Policy{Quota: 1, Window: 4 * time.Second, Burst: 2}}},
		}, 30000),
		sc("hostile-ban-wave", "1 r/s per IP; from 5 to 13 minutes every fourth IP gets block pages", Config{
			Turns: []KeyTurn{{At: HostileAt, For: BanFor, Every: 4, Block: true}},
		}, 24000),
		{Name: "hostile-all-hosts", Kind: PerIP, Description: "four hosts at 1 r/s per IP, all allowing 1 per hour per IP from 5 to 20 minutes",
			Hosts: hosts(4, 9000, func(int) bool { return true })},
	}
}
