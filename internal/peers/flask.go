package peers

import (
	_ "embed"
	"fmt"
	"os/exec"
	"strings"
)

//go:embed flask_app.py
var flaskApp string

// FlaskConfig configures a Python flask-limiter target (Debian's
// python3-flask-limiter: flask-limiter 3.3 over limits 2.8, served by
// werkzeug's threaded server).
type FlaskConfig struct {
	// Limit is the flask-limiter limit string, e.g. "20 per minute".
	// Required.
	Limit string
	// Strategy is the limits strategy: "moving-window", "fixed-window" or
	// "fixed-window-elastic-expiry". Default "moving-window".
	Strategy string
	// NoHeaders turns flask-limiter's rate-limit headers off (its default):
	// 429s are then bare, and no response carries X-RateLimit-* or
	// Retry-After.
	NoHeaders bool
	// Python is the interpreter that has flask_limiter. Default
	// /usr/bin/python3 (Debian's; a pyenv python3 on PATH lacks Debian's
	// packages).
	Python string
	// Listen is the address to listen on. Empty means 127.0.0.1 on a free
	// port.
	Listen string
	// Dir holds the app and its logs. Empty: a temporary directory that
	// Close removes.
	Dir string
}

// Flask is a running flask-limiter app: every path answers 200 "ok" or 429,
// limited per client address with X-RateLimit-Limit, -Remaining, -Reset and
// Retry-After headers on every response (none with NoHeaders). Its access log, written from an after_request hook,
// reads "<unix time with ms> <client address> <status>". It is safe for
// concurrent use.
type Flask struct{ server }

// StartFlask starts the app with cfg and returns once it accepts
// connections.
func StartFlask(cfg FlaskConfig) (*Flask, error) {
	if cfg.Python == "" {
		cfg.Python = "/usr/bin/python3"
	}
	if cfg.Strategy == "" {
		cfg.Strategy = "moving-window"
	}
	if cfg.Limit == "" {
		return nil, fmt.Errorf("flask-limiter: no Limit")
	}
	if out, err := exec.Command(cfg.Python, "-c", "import flask_limiter").CombinedOutput(); err != nil {
		return nil, &NotInstalledError{Bin: cfg.Python + " module flask_limiter", Package: "python3-flask-limiter",
			Err: fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))}
	}
	addr, host, port, err := splitListen(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("flask-limiter: %w", err)
	}
	cfg.Listen = addr
	dir, err := newWorkDir(cfg.Dir, "flask")
	if err != nil {
		return nil, fmt.Errorf("flask-limiter: %w", err)
	}
	app := dir.join("flask_app.py")
	if err := writeFile(app, flaskApp, 0o644); err != nil {
		dir.remove()
		return nil, fmt.Errorf("flask-limiter: %w", err)
	}
	accessLog := dir.join("access.log")
	headers := "on"
	if cfg.NoHeaders {
		headers = "off"
	}
	p, err := startProcess(procSpec{name: "flask-limiter " + cfg.Listen, dir: dir, addr: cfg.Listen,
		logs: []string{accessLog}, bin: cfg.Python, args: []string{app, "--host", host, "--port", port,
			"--limit", cfg.Limit, "--strategy", cfg.Strategy, "--headers", headers, "--log", accessLog}})
	if err != nil {
		return nil, err
	}
	return &Flask{server{proc: p, addr: cfg.Listen, accessLog: accessLog}}, nil
}
