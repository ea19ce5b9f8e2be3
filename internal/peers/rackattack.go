package peers

import (
	_ "embed"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

//go:embed rack_attack_app.rb
var rackAttackApp string

// RackAttackConfig configures a Ruby Rack::Attack target (Debian's
// ruby-rack-attack 6.6 with ruby-activesupport's MemoryStore as its cache,
// served by puma).
type RackAttackConfig struct {
	// Limit requests per Period per client address. Both required; Period
	// is whole seconds (Rack::Attack's periods are).
	Limit  int
	Period time.Duration
	// RetryAfter turns on Rack::Attack's throttled_response_retry_after_header:
	// a 429 says the seconds to its period's end. Off by default, as in
	// Rack::Attack.
	RetryAfter bool
	// Listen is the address to listen on. Empty means 127.0.0.1 on a free
	// port.
	Listen string
	// Dir holds the app and its logs. Empty: a temporary directory that
	// Close removes.
	Dir string
}

// RackAttack is a running Rack::Attack app: every path answers 200 "ok" or
// 429 "Retry later". Its windows are whole periods of the epoch clock, the
// same for every client, and a throttled request counts. Its access log
// reads "<unix time with ms> <client address> <status>".
type RackAttack struct{ server }

// StartRackAttack starts the app with cfg and returns once it accepts
// connections.
func StartRackAttack(cfg RackAttackConfig) (*RackAttack, error) {
	if cfg.Limit <= 0 || cfg.Period < time.Second || cfg.Period%time.Second != 0 {
		return nil, fmt.Errorf("rack-attack: Limit %d per Period %v: want a positive limit and whole seconds", cfg.Limit, cfg.Period)
	}
	if out, err := exec.Command("ruby", "-e", `require "rack/attack"; require "active_support/cache"; require "rack/handler/puma"`).CombinedOutput(); err != nil {
		return nil, &NotInstalledError{Bin: "ruby with rack-attack, activesupport and puma", Package: "ruby-rack-attack ruby-activesupport puma",
			Err: fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))}
	}
	addr, host, port, err := splitListen(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("rack-attack: %w", err)
	}
	cfg.Listen = addr
	dir, err := newWorkDir(cfg.Dir, "rack-attack")
	if err != nil {
		return nil, fmt.Errorf("rack-attack: %w", err)
	}
	app := dir.join("rack_attack_app.rb")
	if err := writeFile(app, rackAttackApp, 0o644); err != nil {
		dir.remove()
		return nil, fmt.Errorf("rack-attack: %w", err)
	}
	accessLog := dir.join("access.log")
	retryAfter := "off"
	if cfg.RetryAfter {
		retryAfter = "on"
	}
	p, err := startProcess(procSpec{name: "rack-attack " + cfg.Listen, dir: dir, addr: cfg.Listen,
		logs: []string{accessLog}, bin: "ruby", args: []string{app, "--host", host, "--port", port,
			"--limit", strconv.Itoa(cfg.Limit), "--period", strconv.Itoa(int(cfg.Period / time.Second)),
			"--retry-after", retryAfter, "--log", accessLog}})
	if err != nil {
		return nil, err
	}
	return &RackAttack{server{proc: p, addr: cfg.Listen, accessLog: accessLog}}, nil
}
