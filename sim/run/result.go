package run

import (
	"math"
	"sort"
	"time"

	"github.com/exitgate/exitgate/fetch"
	"github.com/exitgate/exitgate/frontier"
	"github.com/exitgate/exitgate/sim/server"
)

// Result is what one strategy achieved on one scenario. The first fields are
// the bench's headline figures; the rest explain them.
type Result struct {
	Strategy string `json:"strategy"`
	// Utilization is successes per second over the server's allowed rate
	// (integrated over limit changes), for the whole run.
	Utilization float64 `json:"utilization_whole_run"`
	// Ratio429 is 429s over all responses, for the whole run.
	Ratio429 float64 `json:"ratio_429_whole_run"`
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

	// RequestsSteady counts the responses after the first window.
	RequestsSteady int64 `json:"requests_after_warmup"`

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
	start, steady time.Time
	bucket        time.Duration
	timeline      []Sample

	requests, ok, limited, overloaded, forbidden, errs int64
	sReq, sOK, sLimited                                int64

	done, abandoned int
	reasons         map[string]int
}

func newMeter(start time.Time, warmup, bucket time.Duration) *meter {
	return &meter{start: start, steady: start.Add(warmup), bucket: bucket, reasons: map[string]int{}}
}

func (m *meter) response(r fetch.Response, at time.Time) {
	m.requests++
	steady := !at.Before(m.steady)
	if steady {
		m.sReq++
	}
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
		if steady {
			m.sOK++
		}
	case r.Status == 429:
		m.limited++
		m.timeline[i].Limited++
		if steady {
			m.sLimited++
		}
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
		RequestsSteady:  m.sReq,
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
		r.Utilization = ratio(float64(m.ok), in.site.AllowedRequests(in.keys, el))
	}
	warm := m.steady.Sub(m.start)
	if el > warm {
		r.UtilizationSteady = ratio(float64(m.sOK), in.site.AllowedRequests(in.keys, el)-in.site.AllowedRequests(in.keys, warm))
	}
	r.Ratio429 = ratio(float64(m.limited), float64(m.requests))
	r.Ratio429Steady = ratio(float64(m.sLimited), float64(m.sReq))
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
