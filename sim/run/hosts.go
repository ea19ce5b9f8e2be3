package run

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/sim/measure"
	"github.com/exitgate/exitgate/sim/server"
)

// host is one simulated site of a run and the URLs crawled on it.
type host struct {
	name string
	site *server.Site
	keys int // limiter keys the client presents to it
	urls int
	// only, when set, keeps the record's hits of these keys alone (a real
	// site shared by several runs).
	only map[string]bool
	// ownEnd measures the host up to its own last request.
	ownEnd bool
}

// hostsFor builds the run's sites: the scenario's one site under SiteHost,
// or one per Host of a multi-host scenario. Every site records its requests
// for measure. urls overrides the single site's URL count when > 0.
func hostsFor(sc server.Scenario, exits int, seed uint64, urls int) ([]*host, error) {
	specs := sc.Hosts
	if len(specs) == 0 {
		specs = []server.Host{{Name: SiteHost, Config: sc.Config, URLs: sc.URLs}}
		if urls > 0 {
			specs[0].URLs = urls
		}
	}
	var hs []*host
	for i, h := range specs {
		c := h.Config
		c.Rand = rand.New(rand.NewPCG(seed, 1+uint64(i)<<8))
		c.Logger = nil
		c.Record = true
		site, err := server.New(c)
		if err != nil {
			return nil, fmt.Errorf("host %s: %w", h.Name, err)
		}
		k := keysOf(c, exits)
		n := h.URLs
		if n == 0 {
			n = max(100, int(site.AllowedRequests(k, 10*time.Minute)))
		}
		hs = append(hs, &host{name: h.Name, site: site, keys: k, urls: n, ownEnd: len(sc.Hosts) > 0})
	}
	return hs, nil
}

// keysOf is Keys for one site's config.
func keysOf(c server.Config, exits int) int {
	if c.Key.By == server.KeyIP {
		return exits
	}
	return 1
}

func pushHosts(ctx context.Context, fr frontier.Frontier, hs []*host) error {
	for _, h := range hs {
		if err := pushURLs(ctx, fr, "http://"+h.name, h.urls); err != nil {
			return err
		}
	}
	return nil
}

// HostFigures are one host's figures, measured from its site's record of
// requests (sim/measure), as a real server's access log is measured.
type HostFigures struct {
	Host string `json:"host"`
	// Seconds is the span measured.
	Seconds float64 `json:"seconds"`
	// Utilization is successes over what the host allowed the client's
	// keys over the whole run; UtilizationSteady leaves out the warmup.
	Utilization       float64 `json:"utilization_whole_run"`
	UtilizationSteady float64 `json:"utilization"`
	// Ratio429 is 429s over all requests the host saw; Ratio429Steady
	// leaves out the warmup.
	Ratio429       float64 `json:"ratio_429_whole_run"`
	Ratio429Steady float64 `json:"ratio_429"`
	// SettleSeconds is measure's time to settle (-1: never settled);
	// Learning429s the 429s before it.
	SettleSeconds float64 `json:"settle_seconds"`
	Learning429s  int     `json:"learning_429s"`
	Requests      int     `json:"requests"`
	OK            int     `json:"ok"`
	Limited       int     `json:"responses_429"`
	// Figures are measure's whole-run figures of this host.
	Figures measure.Figures `json:"-"`
	// allowed and allowedSteady are the successes a perfect client could
	// have had (for the overall figures).
	allowed, allowedSteady float64
	okSteady, reqSteady    int
	limSteady              int
}

// measureHost computes h's figures over [start, end), the steady ones
// from start+warmup, and the time to settle and the 429s while learning
// over [start, settleEnd): when a crawl runs out of work its lanes slow
// down, which is not unsettling. Each key's allowed rate is the site's
// allowed rate for all keys divided among them (so a site-wide capacity is
// shared). A host of a multi-host crawl is measured up to its own last
// request.
func measureHost(h *host, start, end, settleEnd time.Time, warmup time.Duration) (HostFigures, error) {
	f := HostFigures{Host: h.name, SettleSeconds: -1}
	raw := h.site.Hits()
	if h.ownEnd && len(raw) > 0 {
		// A host of a multi-host crawl is judged over its own crawl: up
		// to its last request, not while it idles after finishing.
		if last := raw[len(raw)-1].At.Add(time.Millisecond); last.Before(end) {
			end, settleEnd = last, last
		}
	}
	hits := make([]measure.Hit, 0, len(raw))
	refuses := h.site.Refuses() // measured as a 429 (mod_evasive's 403)
	for _, x := range raw {
		if h.only == nil || h.only[x.Key] {
			status := x.Status
			if status == refuses {
				status = http.StatusTooManyRequests
			}
			hits = append(hits, measure.Hit{At: x.At, Key: x.Key, Status: status})
		}
	}
	k := float64(h.keys)
	allowed := func(off time.Duration) func(from, to time.Duration) float64 {
		return func(from, to time.Duration) float64 {
			return (h.site.AllowedRequests(h.keys, to+off) - h.site.AllowedRequests(h.keys, from+off)) / k
		}
	}
	if !end.After(start) {
		return f, nil
	}
	whole, err := measure.Compute(hits, measure.Config{Start: start, End: end, Keys: h.keys, Allowed: allowed(0)})
	if err != nil {
		return f, err
	}
	f.Figures = whole
	f.Utilization, f.Ratio429 = whole.Utilization, whole.Ratio429
	f.SettleSeconds, f.Learning429s = whole.SettleSeconds, whole.LearningLimited
	if settleEnd.Before(end) && settleEnd.After(start) {
		s, err := measure.Compute(hits, measure.Config{Start: start, End: settleEnd, Keys: h.keys, Allowed: allowed(0)})
		if err != nil {
			return f, err
		}
		f.SettleSeconds, f.Learning429s = s.SettleSeconds, s.LearningLimited
		if s.SettleSeconds < 0 {
			// Never settled before the work ran out: every 429 was a
			// learning one.
			f.Learning429s = whole.Limited
		}
		f.Figures.SettleSeconds, f.Figures.LearningLimited = f.SettleSeconds, f.Learning429s
	}
	f.Requests, f.OK, f.Limited = whole.Requests, whole.OK, whole.Limited
	f.allowed = h.site.AllowedRequests(h.keys, end.Sub(start))
	f.Seconds = end.Sub(start).Seconds()
	if s := start.Add(warmup); end.After(s) {
		steady, err := measure.Compute(hits, measure.Config{Start: s, End: end, Keys: h.keys, Allowed: allowed(warmup)})
		if err != nil {
			return f, err
		}
		f.UtilizationSteady, f.Ratio429Steady = steady.Utilization, steady.Ratio429
		f.okSteady, f.reqSteady, f.limSteady = steady.OK, steady.Requests, steady.Limited
		f.allowedSteady = f.allowed - h.site.AllowedRequests(h.keys, warmup)
	}
	return f, nil
}

// overall combines hosts' figures: successes over what all hosts allowed,
// 429s over all requests, the last host's settling (never, if one never
// settled) and every host's learning 429s.
func overall(fs []HostFigures) HostFigures {
	if len(fs) == 1 {
		return fs[0]
	}
	var o HostFigures
	for _, f := range fs {
		o.Requests += f.Requests
		o.OK += f.OK
		o.Limited += f.Limited
		o.Learning429s += f.Learning429s
		o.allowed += f.allowed
		o.allowedSteady += f.allowedSteady
		o.okSteady += f.okSteady
		o.reqSteady += f.reqSteady
		o.limSteady += f.limSteady
		if f.SettleSeconds < 0 || o.SettleSeconds < 0 {
			o.SettleSeconds = -1
		} else {
			o.SettleSeconds = max(o.SettleSeconds, f.SettleSeconds)
		}
	}
	o.Utilization = ratio(float64(o.OK), o.allowed)
	o.UtilizationSteady = ratio(float64(o.okSteady), o.allowedSteady)
	o.Ratio429 = ratio(float64(o.Limited), float64(o.Requests))
	o.Ratio429Steady = ratio(float64(o.limSteady), float64(o.reqSteady))
	return o
}
