package peerbench

import (
	"math"
	"testing"
	"time"

	"github.com/exitgate/exitgate/sim/server"
)

// One list, one name: every real target has a twin named twin-<target>
// with the same limiter and parameters, every twin has a target, in the same
// order, and a twin is measured against the same allowed rate as its target.
func TestTwinsMatchTargets(t *testing.T) {
	targets, twins := Targets(), server.Twins()
	if len(targets) != len(twins) {
		t.Errorf("%d targets, %d twins: want one twin per target", len(targets), len(twins))
	}
	for i, tg := range targets {
		if tg.Twin != "twin-"+tg.Name {
			t.Errorf("target %s: Twin = %q, want twin-%s", tg.Name, tg.Twin, tg.Name)
		}
		if i < len(twins) && twins[i].Name != tg.Twin {
			t.Errorf("twin %d is %s, want %s (the targets' order)", i, twins[i].Name, tg.Twin)
		}
		tw, ok := server.TwinByName(tg.Name)
		if !ok {
			t.Errorf("target %s has no twin", tg.Name)
			continue
		}
		c, p := tw.Config, tw.Config.Policy
		burst := p.Burst
		if burst == 0 {
			burst = p.Quota
		}
		window := time.Duration(tg.Window * float64(time.Second))
		if c.Algorithm != tg.algo || p.Quota != tg.Limit || p.Window != window || burst != tg.twinBurst {
			t.Errorf("%s: %v %d per %v burst %d; target %s: %v %d per %v burst %d",
				tw.Name, c.Algorithm, p.Quota, p.Window, burst, tg.Name, tg.algo, tg.Limit, window, tg.twinBurst)
		}
		if c.RetryAfter != tg.fixedRetryAfter || c.Headers != tg.headers || c.RetryAfterAlways != tg.retryAfterAlways || c.NoRetryAfter {
			t.Errorf("%s: Retry-After %v, headers %v, always %v, none %v; target %s: %v, %v, %v",
				tw.Name, c.RetryAfter, c.Headers, c.RetryAfterAlways, c.NoRetryAfter, tg.Name, tg.fixedRetryAfter, tg.headers, tg.retryAfterAlways)
		}
		if c.Date == tg.noDate || c.Uptime != server.TwinUptime || tw.StartPhase != server.TwinStartPhase {
			t.Errorf("%s: Date %v, uptime %v, start phase %v; target %s sends Date: %v", tw.Name, c.Date, c.Uptime, tw.StartPhase, tg.Name, !tg.noDate)
		}
		counts := c.Algorithm == server.HAProxy || c.Algorithm == server.LimitsFixed || c.Algorithm == server.ExpressMemory
		if counts != tg.CountsDenied {
			t.Errorf("%s counts denied requests: %v; target %s: %v", tw.Name, counts, tg.Name, tg.CountsDenied)
		}
		path := server.LoopbackPath
		if tg.inProcess {
			path = server.InProcessPath
		}
		if tw.Kind != server.PerIP || c.Key.By != server.KeyIP || tw.Path != path || tw.WakeLate != server.TwinWakeLate {
			t.Errorf("%s: kind %v, key %v, path %+v, wake %+v; want per-IP over %+v, waking %+v late",
				tw.Name, tw.Kind, c.Key.By, tw.Path, tw.WakeLate, path, server.TwinWakeLate)
		}
		site, err := server.New(c)
		if err != nil {
			t.Errorf("%s: %v", tw.Name, err)
			continue
		}
		if r := site.AllowedRate(1); math.Abs(r-tg.Rate) > 1e-9*tg.Rate {
			t.Errorf("%s is measured against %v/s per exit, its target %s against %v/s", tw.Name, r, tg.Name, tg.Rate)
		}
	}
}
