package peers

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The embedded Node apps, written beside the modules they require (node
// resolves require() from the script's directory upwards).
var (
	//go:embed express_app.js
	expressApp string
	//go:embed fastify_app.js
	fastifyApp string
	//go:embed flexible_app.js
	flexibleApp string
	//go:embed restify_app.js
	restifyApp string
	//go:embed hono_app.js
	honoApp string
	//go:embed koa_app.js
	koaApp string
	//go:embed hapi_app.js
	hapiApp string
	//go:embed nest_app.js
	nestApp string
	//go:embed limiter_app.js
	limiterApp string
	//go:embed throttle_app.js
	throttleApp string
	// peerCommon is what the apps share (flags, the access log), written
	// beside them as peer_common.js.
	//go:embed peer_common.js
	peerCommon string
)

// NodeModules are the npm packages the Node targets run on, pinned. They are
// installed together, once, into one prefix in the user cache.
var NodeModules = []string{
	"express@5.3.0", "express-rate-limit@8.7.5",
	"fastify@5.12.8", "@fastify/rate-limit@11.2.0",
	"rate-limiter-flexible@11.4.0",
	"restify@12.0.0",
	"hono@4.13.19", "@hono/node-server@2.1.8", "hono-rate-limiter@0.5.4",
	"koa@3.2.1", "koa-ratelimit@6.0.0",
	"@hapi/hapi@21.4.10", "hapi-rate-limit@8.0.0",
	// NestJS 11: 12 wants Node 22, Debian's is 20.
	"@nestjs/common@11.2.12", "@nestjs/core@11.2.12", "@nestjs/platform-express@11.2.12",
	"@nestjs/throttler@6.7.1", "reflect-metadata@0.2.2", "rxjs@7.8.2",
	// Two bucket limiters on express, run blind on 2026-12-07.
	"limiter@4.1.0", "express-throttle@2.0.0",
}

// NodeApp is a running Node target: every path answers 200 "ok" or 429,
// limited per client address. Its access log, written when each response
// finishes, reads "<unix time with ms> <client address> <status>". It is
// safe for concurrent use.
type NodeApp struct{ server }

// nodeSpec is one start of an embedded app.
type nodeSpec struct {
	name    string // e.g. "fastify-rate-limit", for errors and the work dir
	file    string // the app's file name beside node_modules
	source  string // the app itself
	modules string // the npm prefix; empty: the user cache's
	listen  string
	dir     string
	args    []string // the app's own flags, after --host, --port and --log
}

// startNode installs NodeModules when they are missing, writes the app and
// starts it, returning once it accepts connections.
func startNode(spec nodeSpec) (*NodeApp, error) {
	node, err := LookPath("node")
	if err != nil {
		return nil, &NotInstalledError{Bin: "node", Package: "nodejs npm", Err: err}
	}
	if spec.modules == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec.name, err)
		}
		spec.modules = filepath.Join(cache, "exitgate", "node-peer")
	}
	app, err := prepareNode(spec.modules, spec.file, spec.source)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.name, err)
	}
	addr, host, port, err := splitListen(spec.listen)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.name, err)
	}
	dir, err := newWorkDir(spec.dir, spec.name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.name, err)
	}
	accessLog := dir.join("access.log")
	args := append([]string{app, "--host", host, "--port", port, "--log", accessLog}, spec.args...)
	p, err := startProcess(procSpec{name: spec.name + " " + addr, dir: dir, addr: addr,
		logs: []string{accessLog}, bin: node, args: args})
	if err != nil {
		return nil, err
	}
	return &NodeApp{server{proc: p, addr: addr, accessLog: accessLog}}, nil
}

// installMu makes parallel starts install the modules once.
var installMu sync.Mutex

// prepareNode installs NodeModules under prefix with npm unless they are
// there, and writes the app and peer_common.js beside them. It returns the
// app's path.
func prepareNode(prefix, file, source string) (string, error) {
	installMu.Lock()
	defer installMu.Unlock()
	if err := installNode(prefix); err != nil {
		return "", err
	}
	if err := writeChanged(filepath.Join(prefix, "peer_common.js"), peerCommon); err != nil {
		return "", err
	}
	app := filepath.Join(prefix, file)
	return app, writeChanged(app, source)
}

// writeChanged writes source to path unless it holds that already, through
// a temporary file, so that a node starting meanwhile never reads half of
// it.
func writeChanged(path, source string) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == source {
		return nil
	}
	tmp := path + ".tmp"
	if err := writeFile(tmp, source, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// installNode installs every pinned module when one of them is missing or
// at another version.
func installNode(prefix string) error {
	missing := false
	for _, m := range NodeModules {
		name, version := splitModule(m)
		var pkg struct{ Version string }
		b, err := os.ReadFile(filepath.Join(prefix, "node_modules", name, "package.json"))
		if err != nil || json.Unmarshal(b, &pkg) != nil || pkg.Version != version {
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
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append([]string{"install", "--no-audit", "--no-fund", "--prefix", prefix}, NodeModules...)
	if out, err := exec.CommandContext(ctx, npm, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("npm %v: %w\n%s", args, err, out)
	}
	return nil
}

// splitModule splits "name@version", the name possibly scoped ("@scope/x").
func splitModule(m string) (name, version string) {
	i := strings.LastIndexByte(m, '@')
	if i <= 0 {
		return m, ""
	}
	return m[:i], m[i+1:]
}

// windowMillis is a window as the apps' --window flag takes it.
func windowMillis(d time.Duration) string { return fmt.Sprint(d.Milliseconds()) }
