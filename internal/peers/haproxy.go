package peers

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// HAProxyConfig configures an haproxy target that limits each client
// address with a stick table. The request rate is tracked on src BEFORE the
// deny rule, so denied requests count too: a client that keeps sending while
// limited stays limited (the penalising behaviour of real deployments).
type HAProxyConfig struct {
	// Limit denies a request with 429 once the client's http_req_rate over
	// Period, this request included, is above Limit. Required.
	Limit int
	// Period is the stick table's http_req_rate period. Default 10s; whole
	// seconds.
	Period time.Duration
	// Ban, when set, bans a client once its rate is over Limit, as
	// HAProxy's manual sets one up: sc-inc-gpc0 marks the stick table's
	// entry, every request of a marked client is denied, and the entry
	// expires Ban after the client's last request (denied ones too, so a
	// client that keeps sending stays banned). Whole seconds; 0: no ban,
	// the rate alone denies.
	Ban time.Duration
	// RetryAfter, when set, is sent as the fixed Retry-After of every 429.
	// Empty: no header.
	RetryAfter string
	// Listen is the address to listen on. Empty means 127.0.0.1 on a free
	// port.
	Listen string
	// Dir holds the configuration and logs. Empty: a temporary directory
	// that Close removes.
	Dir string
}

// HAProxy is a running haproxy that answers every path itself: 200 "ok", or
// 429 once the client address is over its rate. Its access log, written by
// haproxy to stdout with `log-format "%Ts.%ms %ci %ST"`, reads
// "<accept time> <client address> <status>". It is safe for concurrent use.
type HAProxy struct{ server }

const haproxyConf = `global
    log stdout format raw local0
    nbthread 1
    maxconn 2048
defaults
    mode http
    log global
    option dontlognull
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout http-request 10s
frontend target
    bind {{listen}}
    log-format "%Ts.%ms %ci %ST"
    stick-table type ip size 100k expire {{expire}} store {{store}}http_req_rate({{period}})
    http-request track-sc0 src
{{rules}}    http-request return status 200 content-type text/plain string "ok"
`

// The deny rules: over the rate, or (with a ban) once marked over it.
const (
	haproxyRateRule = "    http-request deny deny_status 429{{hdr}} if { sc_http_req_rate(0) gt {{limit}} }\n"
	haproxyBanRules = "    http-request sc-inc-gpc0(0) if { sc_http_req_rate(0) gt {{limit}} }\n" +
		"    http-request deny deny_status 429{{hdr}} if { sc_get_gpc0(0) gt 0 }\n"
)

// StartHAProxy starts haproxy with cfg and returns once it accepts
// connections.
func StartHAProxy(cfg HAProxyConfig) (*HAProxy, error) {
	bin, err := LookPath("haproxy")
	if err != nil {
		return nil, err
	}
	if cfg.Limit <= 0 {
		return nil, fmt.Errorf("haproxy: Limit %d, want > 0", cfg.Limit)
	}
	if cfg.Period == 0 {
		cfg.Period = 10 * time.Second
	}
	if cfg.Period < time.Second || cfg.Period%time.Second != 0 {
		return nil, fmt.Errorf("haproxy: Period %v, want whole seconds", cfg.Period)
	}
	if cfg.Listen, err = freeAddr(cfg.Listen); err != nil {
		return nil, fmt.Errorf("haproxy: %w", err)
	}
	if err := checkConf("haproxy", "Listen", cfg.Listen); err != nil {
		return nil, err
	}
	hdr := ""
	if cfg.RetryAfter != "" {
		if err := checkConf("haproxy", "RetryAfter", cfg.RetryAfter); err != nil {
			return nil, err
		}
		hdr = " hdr Retry-After " + cfg.RetryAfter
	}
	sec := int(cfg.Period / time.Second)
	expire, store, rules := strconv.Itoa(3*sec)+"s", "", haproxyRateRule
	if cfg.Ban != 0 {
		if cfg.Ban < time.Second || cfg.Ban%time.Second != 0 {
			return nil, fmt.Errorf("haproxy: Ban %v, want whole seconds", cfg.Ban)
		}
		expire, store, rules = strconv.Itoa(int(cfg.Ban/time.Second))+"s", "gpc0,", haproxyBanRules
	}
	conf := strings.NewReplacer(
		"{{rules}}", rules, "{{store}}", store, "{{expire}}", expire,
	).Replace(haproxyConf)
	conf = strings.NewReplacer(
		"{{listen}}", cfg.Listen, "{{period}}", strconv.Itoa(sec)+"s",
		"{{limit}}", strconv.Itoa(cfg.Limit), "{{hdr}}", hdr,
	).Replace(conf)
	dir, err := newWorkDir(cfg.Dir, "haproxy")
	if err != nil {
		return nil, fmt.Errorf("haproxy: %w", err)
	}
	confPath := dir.join("haproxy.cfg")
	if err := writeFile(confPath, conf, 0o644); err != nil {
		dir.remove()
		return nil, fmt.Errorf("haproxy: %w", err)
	}
	accessLog := dir.join("access.log")
	p, err := startProcess(procSpec{name: "haproxy " + cfg.Listen, dir: dir, addr: cfg.Listen, stdout: accessLog,
		bin: bin, args: []string{"-db", "-f", confPath}})
	if err != nil {
		return nil, err
	}
	return &HAProxy{server{proc: p, addr: cfg.Listen, accessLog: accessLog}}, nil
}
