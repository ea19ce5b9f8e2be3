package peerbench

import (
	"context"
	"encoding/xml"
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/internal/peers"
	"github.com/exitgate/exitgate/sim/measure"
	"github.com/exitgate/exitgate/sim/server"
	"github.com/exitgate/exitgate/sim/strategy"
)

func TestExitAddrs(t *testing.T) {
	for _, tt := range []struct {
		first      string
		n          int
		head, tail string
		wantErr    bool
	}{
		{"127.0.0.11", 10, "127.0.0.11", "127.0.0.20", false},
		{"127.0.0.250", 6, "127.0.0.250", "127.0.1.1", false}, // .255 and .0 skipped
		{"127.255.255.250", 10, "", "", true},
	} {
		got, err := ExitAddrs(netip.MustParseAddr(tt.first), tt.n)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ExitAddrs(%s, %d) = %v, want an error", tt.first, tt.n, got)
			}
			continue
		}
		if err != nil || len(got) != tt.n || got[0].String() != tt.head || got[tt.n-1].String() != tt.tail {
			t.Errorf("ExitAddrs(%s, %d) = %v, %v; want %d from %s to %s", tt.first, tt.n, got, err, tt.n, tt.head, tt.tail)
		}
		for _, a := range got {
			if b := a.As4(); b[3] == 0 || b[3] == 255 {
				t.Errorf("ExitAddrs(%s, %d) holds %v", tt.first, tt.n, a)
			}
		}
	}
}

func TestSelectTargets(t *testing.T) {
	all, err := SelectTargets([]string{"all"})
	if err != nil || len(all) != len(Targets()) {
		t.Fatalf("SelectTargets(all) = %d, %v; want %d", len(all), err, len(Targets()))
	}
	got, err := SelectTargets([]string{"haproxy-2-per-10s", "nginx-1r-s"})
	if err != nil || len(got) != 2 || got[0].Name != "haproxy-2-per-10s" || got[1].Name != "nginx-1r-s" {
		t.Errorf("SelectTargets(two) = %v, %v; want both in order", got, err)
	}
	if _, err := SelectTargets([]string{"nginx-1r-s", "apache"}); err == nil || !strings.Contains(err.Error(), `"apache"`) {
		t.Errorf("SelectTargets(unknown) = %v, want an error naming it", err)
	}
	held, err := SelectTargets([]string{"holdout"})
	if err != nil || len(held) != len(Holdouts()) {
		t.Fatalf("SelectTargets(holdout) = %d, %v; want %d", len(held), err, len(Holdouts()))
	}
	if got, err := SelectTargets([]string{"nginx-1r-s", "throttled-5-s-burst3"}); err != nil || len(got) != 2 {
		t.Errorf("SelectTargets(a target and a held-out one) = %v, %v", got, err)
	}
	if got, err := SelectTargets([]string{"nginx-1r-s", "holdout"}); err != nil || len(got) != 1+len(Holdouts()) {
		t.Errorf("SelectTargets(a target and holdout) = %d targets, %v; want %d", len(got), err, 1+len(Holdouts()))
	}
}

// Held-out targets describe themselves as the others do, share no name with
// them, have no twin but a scenario built beside them (the Varnish ones:
// wide's block-bucket-*), and without one are refused by a calibration
// before any run.
func TestHoldouts(t *testing.T) {
	names := map[string]bool{}
	for _, tg := range Targets() {
		names[tg.Name] = true
	}
	for _, tg := range Holdouts() {
		if names[tg.Name] {
			t.Errorf("held-out %s: name taken", tg.Name)
		}
		names[tg.Name] = true
		if tg.Server == "" || tg.Algorithm == "" || tg.Limit <= 0 || tg.Window <= 0 || tg.Headers == "" || tg.RetryAfter == "" || tg.Config == "" || tg.start == nil {
			t.Errorf("held-out %+v: incomplete description", tg)
		}
		if want := float64(tg.Limit) / tg.Window; math.Abs(tg.Rate-want) > want*0.01 {
			t.Errorf("held-out %s: rate %v, but %d per %v s", tg.Name, tg.Rate, tg.Limit, tg.Window)
		}
		if tg.Twin != "" {
			if _, twin := server.TwinByName(tg.Name); twin || strings.HasPrefix(tg.Twin, "twin-") {
				t.Errorf("held-out %s has a twin %q", tg.Name, tg.Twin)
			}
			if _, ok := server.ScenarioByName(tg.Twin); !ok {
				t.Errorf("held-out %s: no scenario %q beside it", tg.Name, tg.Twin)
			}
		}
	}
	var bare []Target
	for _, tg := range Holdouts() {
		if tg.Twin == "" {
			bare = append(bare, tg)
			break
		}
	}
	_, err := Calibrate(context.Background(), CalibrationConfig{Targets: bare, Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "held out") {
		t.Errorf("Calibrate(a held-out target) = %v, want it refused", err)
	}
}

// The catalogue spans 6/min to 10/s per IP and Retry-After from none to 60
// s, and every target says what it is.
func TestTargetsDescribeThemselves(t *testing.T) {
	lo, hi := 1e9, 0.0
	var noRetryAfter, retryAfter60 bool
	for _, tg := range Targets() {
		if tg.Name == "" || tg.Server == "" || tg.Algorithm == "" || tg.Limit <= 0 || tg.Window <= 0 || tg.Rate <= 0 ||
			tg.RetryAfter == "" || tg.Headers == "" || tg.Config == "" || tg.start == nil {
			t.Errorf("target %+v: incomplete description", tg)
		}
		if want := float64(tg.Limit) / tg.Window; tg.Rate < want*0.99 || tg.Rate > want*1.01 {
			t.Errorf("target %s: rate %v, but %d per %v s", tg.Name, tg.Rate, tg.Limit, tg.Window)
		}
		lo, hi = min(lo, tg.Rate), max(hi, tg.Rate)
		noRetryAfter = noRetryAfter || tg.RetryAfter == "none"
		retryAfter60 = retryAfter60 || strings.HasPrefix(tg.RetryAfter, "60")
	}
	if lo > 0.1+1e-9 || hi < 10 || !noRetryAfter || !retryAfter60 {
		t.Errorf("targets span %v to %v/s, Retry-After none %v, 60 %v; want 0.1 to 10/s, none and 60", lo, hi, noRetryAfter, retryAfter60)
	}
}

func TestURLCount(t *testing.T) {
	tg, _ := SelectTargets([]string{"nginx-1r-s"})
	eg, _ := strategy.ByName(strategy.Exitgate)
	scrapy, _ := strategy.ByName(strategy.ScrapyAutoThrottle)
	// 10 exits × 1/s × 120 s plus a first window each, doubled; plus
	// 4000 requests/s over 120 s, each URL abandoned after 20 429s.
	if got, want := urlCount(tg[0], eg, 10, 2*time.Minute), 2*1210+24000+100; got != want {
		t.Errorf("urlCount(exitgate) = %d, want %d", got, want)
	}
	// Scrapy's RetryMiddleware gives up after 2.
	if got, want := urlCount(tg[0], scrapy, 10, 2*time.Minute), 2*1210+240000+100; got != want {
		t.Errorf("urlCount(scrapy) = %d, want %d", got, want)
	}
}

func counts(entries map[string]map[int]int, errs map[string]int) Counts {
	c := newCounts()
	for ip, by := range entries {
		for st, n := range by {
			c.add(ip, st, n)
		}
	}
	for ip, n := range errs {
		c.add(ip, 0, n)
	}
	return c
}

func TestCompare(t *testing.T) {
	a := map[string]map[int]int{"127.0.0.11": {200: 10, 429: 1}, "127.0.0.12": {200: 9}}
	for _, tt := range []struct {
		name           string
		client, server Counts
		want           int
	}{
		{"same", counts(a, nil), counts(a, nil), 0},
		{"server missed one", counts(a, nil), counts(map[string]map[int]int{"127.0.0.11": {200: 10, 429: 1}, "127.0.0.12": {200: 8}}, nil), 1},
		{"proxy answered itself", counts(map[string]map[int]int{"127.0.0.11": {200: 10, 429: 1, 502: 1}, "127.0.0.12": {200: 9}}, nil), counts(a, nil), 1},
		// A transport error may have reached the server.
		{"error reached the server", counts(map[string]map[int]int{"127.0.0.11": {200: 10}, "127.0.0.12": {200: 9}}, map[string]int{"127.0.0.11": 1}), counts(a, nil), 0},
		{"more than the errors", counts(map[string]map[int]int{"127.0.0.11": {200: 9}, "127.0.0.12": {200: 9}}, map[string]int{"127.0.0.11": 1}), counts(a, nil), 1},
		{"exit unknown to the client", counts(map[string]map[int]int{"127.0.0.11": {200: 10, 429: 1}}, nil), counts(a, nil), 1},
	} {
		if got := compare(tt.client, tt.server); len(got) != tt.want {
			t.Errorf("%s: compare = %q, want %d mismatches", tt.name, got, tt.want)
		}
	}
}

// The report and the chart render every strategy, mark disagreement and
// failures, and the chart is well-formed XML.
func TestReportAndSVG(t *testing.T) {
	tg, _ := SelectTargets([]string{"haproxy-20-per-10s"})
	ok := Result{Target: tg[0].Name, Strategy: "exitgate", Agree: true, DurationSeconds: 120, Server: measure.Figures{
		Seconds: 120, Requests: 2300, OK: 2290, Limited: 10, Utilization: 0.95, UtilizationAfter30: 0.97, UtilizationAfter60: 0.98,
		Ratio429: 10.0 / 2300, SettleSeconds: 41, LearningLimited: 7, Bucket: 1,
		Timeline: []measure.Sample{{OK: 19}, {OK: 20, Limited: 1}, {OK: 20}},
	}}
	bad := ok
	bad.Strategy, bad.Agree, bad.Mismatches = "no-limiter", false, []string{"exit 127.0.0.11: 200: client 10, server 9"}
	failed := Result{Target: tg[0].Name, Strategy: "per-worker", Error: "haproxy 127.0.0.1:4000: exited\nlog tail"}
	rep := Report{Command: "go run ./cmd/peerbench", Exits: 10, DurationSeconds: 120, Mode: "engine", Targets: tg,
		Results: []Result{ok, bad, failed}}
	var md strings.Builder
	if err := Markdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| target | exitgate | no-limiter | per-worker |", "| haproxy-20-per-10s | 98% / 0.4% | 98% / 0.4% | failed |",
		"### haproxy-20-per-10s", "| exitgate | 95.0% | 97.0% | 98.0% | 0.43% | 7 | 41 s | 2300 | yes |",
		"| no-limiter |", "**no**", "client and server disagree: exit 127.0.0.11", "per-worker failed: haproxy 127.0.0.1:4000: exited"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	var svg strings.Builder
	if err := SVG(&svg, tg[0], 10, rep.Results); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(svg.String()))
	lines := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("SVG is not well-formed: %v", err)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	// Two panels × two strategies with a timeline.
	if lines != 4 {
		t.Errorf("SVG has %d polylines, want 4", lines)
	}
	for _, want := range []string{"allowed 20/s", ">0<", ">120s<", "exitgate", "no-limiter", "per-worker", "failed"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

// A request nginx's limit rejected is limited whatever status it was
// answered with (limit_req_status 503), and the client's and server's
// counts still compare by the status sent; a plain 503 is not limited.
func TestJudgeRejected503(t *testing.T) {
	start := time.Unix(1000, 0)
	log := []peers.AccessEntry{
		{Time: start, RemoteAddr: "127.0.0.11", Status: 200, Limit: "PASSED"},
		{Time: start.Add(time.Second), RemoteAddr: "127.0.0.11", Status: 503, Limit: "REJECTED"},
		{Time: start.Add(2 * time.Second), RemoteAddr: "127.0.0.11", Status: 503, Limit: "-"},
	}
	r := Result{ClientCounts: counts(map[string]map[int]int{"127.0.0.11": {200: 1, 503: 2}}, nil)}
	cfg := RunConfig{Exits: 1, Duration: 10 * time.Second, Target: Target{Rate: 1}}
	if err := r.judge(log, map[string]string{"x": "127.0.0.11"}, start, cfg); err != nil {
		t.Fatal(err)
	}
	if r.Server.Limited != 1 || !r.Agree {
		t.Errorf("limited %d, agree %v (%q); want 1 and the counts agreeing", r.Server.Limited, r.Agree, r.Mismatches)
	}
}
