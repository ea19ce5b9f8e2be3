package peers

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

//go:embed express_app.js
var expressApp string

// ExpressModules are the npm packages the express target runs on, pinned.
var ExpressModules = []string{"express@5.3.0", "express-rate-limit@8.7.5"}

// ExpressConfig configures a Node express-rate-limit target.
type ExpressConfig struct {
	// Limit requests are allowed per Window per client address. Required.
	Limit  int
	Window time.Duration
	// Headers is express-rate-limit's standardHeaders: "draft-6",
	// "draft-7" or "draft-8" (RateLimit and RateLimit-Policy structured
	// fields). Default "draft-8".
	Headers string
	// Modules is the npm prefix holding node_modules with ExpressModules.
	// Default <user cache dir>/exitgate/express-peer. When they are missing
	// they are installed there once with npm.
	Modules string
	// Listen is the address to listen on. Empty means 127.0.0.1 on a free
	// port.
	Listen string
	// Dir holds the app and its logs. Empty: a temporary directory that
	// Close removes.
	Dir string
}

// Express is a running express-rate-limit app: every path answers 200 "ok"
// or 429, limited per client address. Its access log, written when each
// response finishes, reads "<unix time with ms> <client address>
// <status>". It is safe for concurrent use.
type Express struct{ server }

// StartExpress starts the app with cfg and returns once it accepts
// connections, installing its npm modules first if they are missing.
func StartExpress(cfg ExpressConfig) (*Express, error) {
	node, err := LookPath("node")
	if err != nil {
		return nil, &NotInstalledError{Bin: "node", Package: "nodejs npm", Err: err}
	}
	if cfg.Limit <= 0 || cfg.Window < time.Millisecond {
		return nil, fmt.Errorf("express-rate-limit: Limit %d per %v, want a limit and a window", cfg.Limit, cfg.Window)
	}
	if cfg.Headers == "" {
		cfg.Headers = "draft-8"
	}
	if cfg.Modules == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("express-rate-limit: %w", err)
		}
		cfg.Modules = filepath.Join(cache, "exitgate", "express-peer")
	}
	app, err := prepareExpress(cfg.Modules)
	if err != nil {
		return nil, err
	}
	addr, host, port, err := splitListen(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("express-rate-limit: %w", err)
	}
	cfg.Listen = addr
	dir, err := newWorkDir(cfg.Dir, "express")
	if err != nil {
		return nil, fmt.Errorf("express-rate-limit: %w", err)
	}
	accessLog := dir.join("access.log")
	p, err := startProcess(procSpec{name: "express-rate-limit " + cfg.Listen, dir: dir, addr: cfg.Listen,
		logs: []string{accessLog}, bin: node, args: []string{app, "--host", host, "--port", port,
			"--limit", strconv.Itoa(cfg.Limit), "--window", strconv.FormatInt(cfg.Window.Milliseconds(), 10),
			"--headers", cfg.Headers, "--log", accessLog}})
	if err != nil {
		return nil, err
	}
	return &Express{server{proc: p, addr: cfg.Listen, accessLog: accessLog}}, nil
}

// installMu makes parallel starts install the modules once.
var installMu sync.Mutex

// prepareExpress installs ExpressModules under prefix with npm unless they
// are there, and writes the app beside them (node resolves require() from
// the script's directory upwards). It returns the app's path.
func prepareExpress(prefix string) (string, error) {
	installMu.Lock()
	defer installMu.Unlock()
	if err := installExpress(prefix); err != nil {
		return "", err
	}
	app := filepath.Join(prefix, "express_app.js")
	if old, err := os.ReadFile(app); err == nil && string(old) == expressApp {
		return app, nil
	}
	tmp := app + ".tmp"
	if err := writeFile(tmp, expressApp, 0o644); err != nil {
		return "", fmt.Errorf("express-rate-limit: %w", err)
	}
	if err := os.Rename(tmp, app); err != nil {
		return "", fmt.Errorf("express-rate-limit: %w", err)
	}
	return app, nil
}

func installExpress(prefix string) error {
	missing := false
	for _, m := range []string{"express", "express-rate-limit"} {
		if _, err := os.Stat(filepath.Join(prefix, "node_modules", m, "package.json")); err != nil {
			missing = true
		}
	}
	if !missing {
		return nil
	}
	npm, err := LookPath("npm")
	if err != nil {
		return &NotInstalledError{Bin: "npm", Package: "npm", Err: err}
	}
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		return fmt.Errorf("express-rate-limit: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append([]string{"install", "--no-audit", "--no-fund", "--prefix", prefix}, ExpressModules...)
	if out, err := exec.CommandContext(ctx, npm, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("express-rate-limit: npm %v: %w\n%s", args, err, out)
	}
	return nil
}
