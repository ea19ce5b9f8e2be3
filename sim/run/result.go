package run

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/sim/measure"
	"github.com/exitgate/exitgate/sim/server"
)

// Result is what one strategy achieved on one scenario. The first fields are
// the bench's headline figures; the rest explain them.
//
// Utilization, the 429 ratios, SettleSeconds and Learning429s are measured
// by sim/measure from the sites' own records of requests (arrival, key,
// status), as the real-limiter harness measures a real server's access
// log: one definition for both. The counts below them are the client's.
type Result struct {
	Strategy string `json:"strategy"`
	// Utilization is successes over what the server allowed the client's
	// keys (integrated over limit changes), for the whole run.
	Utilization float64 `json:"utilization_whole_run"`
	// Ratio429 is 429s over all requests the server saw, for the whole run.
	Ratio429 float64 `json:"ratio_429_whole_run"`
	// SettleSeconds is the time to settle: from then on every key's
	// success rate stays within 90-100% of its limit (sim/measure); -1
	// when the run never settled.
	SettleSeconds float64 `json:"settle_seconds"`
	// Learning429s is the 429s before the run settled (all of them if it
	// never did).
	Learning429s int `json:"learning_429s"`
	// Bans is the number of bans the site issued.
	Bans int64 `json:"bans"`
	// RetriesPerSuccess is attempts beyond the first per URL, per success.
	RetriesPerSuccess float64 `json:"retries_per_success"`
	// SecondsToFinish is when the last URL reached done or abandoned.
	SecondsToFinish float64 `json:"seconds_to_finish"`

	// UtilizationSteady and Ratio429Steady leave out the first window
	// (Config.Warmup): the figures the targets are stated on, and so the
	// ones JSON reports as "utilization" and "ratio_429".
	UtilizationSteady float64 `json:"utilization"`
	Ratio429Steady    float64 `json:"ratio_429"`
	// AllowedRate is the server's allowed successes per second at the
	// start; SuccessRate is the achieved mean.
	AllowedRate float64 `json:"allowed_rate"`
	SuccessRate float64 `json:"success_rate"`
	// Finished is false when the run stopped at its time cap.
	Finished bool `json:"finished"`

	// RequestsSteady counts the requests the server saw after the first
	// window.
	RequestsSteady int64 `json:"requests_after_warmup"`
	// Hosts holds each host's figures in a multi-host scenario (the
	// figures above are then over all hosts).
	Hosts []HostFigures `json:"hosts,omitempty"`
	// Figures are measure's whole-run figures of a one-host run, the form
	// in which the real-limiter harness reports a real server.
	Figures measure.Figures `json:"-"`

	Requests   int64          `json:"requests"`
	Successes  int64          `json:"successes"`
	Limited    int64          `json:"responses_429"`
	Overloaded int64          `json:"responses_503"`
	Forbidden  int64          `json:"responses_403"`
	Errors     int64          `json:"transport_errors"`
	URLs       int            `json:"urls"`
	Done       int            `json:"done"`
	Abandoned  int            `json:"abandoned"`
	Reasons    map[string]int `json:"abandoned_by_reason,omitempty"`

	// Timeline holds successes and 429s per Bucket from the start.
	Timeline []Sample      `json:"-"`
	Bucket   time.Duration `json:"-"`
	// Wall is how long the run took on the machine.
	Wall time.Duration `json:"-"`
}

// Sample is one timeline bucket.
type Sample struct {
	OK, Limited int32
}

// meter counts responses as they complete, in time order.
type meter struct {
	start    time.Time
	bucket   time.Duration
	timeline []Sample

	requests, ok, limited, overloaded, forbidden, errs int64

	done, abandoned int
	reasons         map[string]int
}

func newMeter(start time.Time, bucket time.Duration) *meter {
	return &meter{start: start, bucket: bucket, reasons: map[string]int{}}
}

func (m *meter) response(r fetch.Response, at time.Time) {
	m.requests++
	i := int(at.Sub(m.start) / m.bucket)
	for len(m.timeline) <= i {
		m.timeline = append(m.timeline, Sample{})
	}
	switch {
	case r.Err != nil || r.Status == 0:
		m.errs++
	case r.Status < 400:
		m.ok++
		m.timeline[i].OK++
	case r.Status == 429:
		m.limited++
		m.timeline[i].Limited++
	case r.Status == 503:
		m.overloaded++
	case r.Status == 403:
		m.forbidden++
	}
}

// finished is the Core's OnFinish hook.
func (m *meter) finished(f fetch.Finished) {
	if f.Outcome == "done" {
		m.done++
		return
	}
	m.abandoned++
	m.reasons[f.Reason]++
}

type resultInput struct {
	scenario server.Scenario
	strategy string
	site     *server.Site
	keys     int
	urls     int
	exits    int
	end      time.Time
	counts   frontier.Counts
}

func (m *meter) result(in resultInput) Result {
	el := in.end.Sub(m.start)
	st := in.site.Stats()
	r := Result{
		Strategy:        in.strategy,
		Bans:            st.Bans,
		SecondsToFinish: el.Seconds(),
		AllowedRate:     in.site.AllowedRateAt(in.keys, 0),
		Finished:        in.counts.Unfinished() == 0,
		Requests:        m.requests,
		Successes:       m.ok,
		Limited:         m.limited,
		Overloaded:      m.overloaded,
		Forbidden:       m.forbidden,
		Errors:          m.errs,
		URLs:            in.urls,
		Done:            m.done,
		Abandoned:       m.abandoned,
		Timeline:        m.timeline,
		Bucket:          m.bucket,
	}
	if len(m.reasons) > 0 {
		r.Reasons = m.reasons
	}
	if el > 0 {
		r.SuccessRate = float64(m.ok) / el.Seconds()
	}
	if m.ok > 0 {
		r.RetriesPerSuccess = float64(max(0, m.requests-int64(m.done+m.abandoned))) / float64(m.ok)
	}
	return r
}

func ratio(a, b float64) float64 {
	if b <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return 0
	}
	return a / b
}

// measure sets the server-side figures from the hosts' records over
// [start, end), the steady ones from start+warmup, settling up to
// settleEnd.
func (r *Result) measure(hs []*host, start, end, settleEnd time.Time, warmup time.Duration) error {
	var fs []HostFigures
	for _, h := range hs {
		f, err := measureHost(h, start, end, settleEnd, warmup)
		if err != nil {
			return fmt.Errorf("measure %s: %w", h.name, err)
		}
		fs = append(fs, f)
	}
	o := overall(fs)
	r.Utilization, r.UtilizationSteady = o.Utilization, o.UtilizationSteady
	r.Ratio429, r.Ratio429Steady = o.Ratio429, o.Ratio429Steady
	r.SettleSeconds, r.Learning429s = o.SettleSeconds, o.Learning429s
	r.RequestsSteady = int64(o.reqSteady)
	if len(fs) > 1 {
		r.Hosts = fs
	} else {
		r.Figures = fs[0].Figures
	}
	return nil
}

// TopReasons returns up to n abandon reasons, most frequent first.
func (r Result) TopReasons(n int) []string {
	type kv struct {
		k string
		v int
	}
	var all []kv
	for k, v := range r.Reasons {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || all[i].v == all[j].v && all[i].k < all[j].k })
	var out []string
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, all[i].k)
	}
	return out
}
