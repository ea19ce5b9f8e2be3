package peers

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// NginxConfig configures a rate-limited nginx target. The zero value is the
// reference target of local-peers.md: 1r/s per client address, no burst,
// Retry-After: 1, 404 for paths without a file.
type NginxConfig struct {
	// Rate is the limit_req_zone rate per client address, e.g. "1r/s" or
	// "30r/m". Empty means "1r/s".
	Rate string
	// Burst is the limit_req burst. Zero means none. A positive burst is
	// served with nodelay, so requests within it are answered at once,
	// unless Delay is set.
	Burst int
	// Delay leaves nodelay out: requests within the burst are held until
	// their turn at the rate, and answered late (nginx's default).
	Delay bool
	// RetryAfter is the fixed Retry-After value sent with every 429, and
	// with every response of Status when that is another (nginx cannot
	// compute one, nor tell a rejection from another answer of that
	// status). Empty means "1"; NoRetryAfter sends none.
	RetryAfter   string
	NoRetryAfter bool
	// LongRate and LongBurst, when LongRate is set, are a second zone per
	// client address that every request passes too (a long-term limit
	// under a burst's, as sites layer them), with nodelay.
	LongRate  string
	LongBurst int
	// Status is what a request the limit rejects is answered with
	// (limit_req_status). Zero means 429; nginx's own default, when the
	// directive is left out, is 503, which a client cannot tell from an
	// overload but by what other clients get.
	Status int
	// Listen is the address to listen on. Empty means 127.0.0.1 on a free
	// port.
	Listen string
	// Files are extra files to serve, keyed by path relative to the web root
	// (e.g. "a/b.txt"). Text files are processed by SSI, so a body may
	// contain <!--#echo var="remote_addr" -->.
	Files map[string]string
	// Fallback, when set, is a file under the web root served (and limited
	// like any other) for every path that has no file of its own, so that a
	// crawl can fetch any number of distinct URLs. Empty: such paths are 404.
	Fallback string
	// Dir holds the configuration, web root and logs. Empty: a temporary
	// directory that Close removes.
	Dir string
	// The hostile turns (see Nginx.Turn), each off until turned on:
	// TurnBan answers the Block addresses 403 with a Cloudflare-style block
	// page, before any limit (a ban wave); TurnSlow holds the SlowAddrs to
	// SlowRate as well as to Rate (a second zone keyed on them alone: exits
	// of a worse reputation); TurnHalf holds every address to HalfRate as
	// well (a limit lowered); TurnLockout answers every request 429.
	Block     []string
	SlowAddrs []string
	SlowRate  string
	HalfRate  string
}

// Nginx is a running nginx that limits requests per client address
// ($binary_remote_addr) with status 429 (NginxConfig.Status) and serves
// files from its web root.
// GET /ip answers with the client address (via SSI) and is limited like
// every other path. Its access log lines read
// `$msec $remote_addr $status limit=$limit_req_status "$request"`.
// It is safe for concurrent use.
type Nginx struct {
	server
	root string
	dir  workDir
}

// master_process off keeps nginx to one process: SIGKILL then leaves no
// orphaned worker behind for an init that may not reap zombies.
const nginxConf = `master_process off;
worker_processes 1;
pid {{dir}}/nginx.pid;
error_log {{dir}}/error.log notice;
events { worker_connections 512; }
http {
    default_type text/plain;
    client_body_temp_path {{dir}}/tmp_body;  proxy_temp_path {{dir}}/tmp_proxy;
    fastcgi_temp_path {{dir}}/tmp_fcgi;      uwsgi_temp_path {{dir}}/tmp_uwsgi;
    scgi_temp_path {{dir}}/tmp_scgi;
    log_format peer '$msec $remote_addr $status limit=$limit_req_status "$request"';
    access_log {{dir}}/access.log peer;
    limit_req_zone $binary_remote_addr zone=perip:1m rate={{rate}};
    geo $blocked {
        default "";{{block}}
    }
    map $remote_addr $slow_addr {
        default "";{{slow}}
    }
    limit_req_zone $slow_key zone=slow:1m rate={{slowrate}};
    limit_req_zone $half_key zone=half:1m rate={{halfrate}};
    limit_req_zone $long_key zone=long:1m rate={{longrate}};
    limit_req_status {{status}};
    map $status $retry_after { 429 "{{retry}}";{{statusretry}} default ""; }
    server {
        listen {{listen}};
        root {{dir}}/www;
        add_header Retry-After $retry_after always;  # for the turns' answers
        # Hostile turns, toggled by files (Nginx.Turn): tested on every
        # request in the server's rewrite phase, before limit_req (an "if"
        # inside the location would serve the request without try_files).
        if (-f {{dir}}/turn-lockout) {
            return 429 'locked out\n';
        }
        set $ban "";
        if (-f {{dir}}/turn-ban) {
            set $ban $blocked;
        }
        if ($ban) {
            return 403 '{{blockpage}}';
        }
        set $slow_key "";
        if (-f {{dir}}/turn-slow) {
            set $slow_key $slow_addr;
        }
        set $long_key "{{longkey}}";
        set $half_key "";
        if (-f {{dir}}/turn-half) {
            set $half_key $binary_remote_addr;
        }
        location / {
            limit_req zone=perip{{burst}};
            limit_req zone=slow{{burst}};
            limit_req zone=half{{burst}};
            limit_req zone=long{{longburst}};
            add_header Retry-After $retry_after always;
            ssi on; ssi_types text/plain;
            index index.html;{{tryfiles}}
        }
    }
}
`

// StartNginx starts nginx with cfg and returns once it accepts connections.
func StartNginx(cfg NginxConfig) (*Nginx, error) {
	bin, err := LookPath("nginx")
	if err != nil {
		return nil, err
	}
	if cfg.Rate == "" {
		cfg.Rate = "1r/s"
	}
	if cfg.RetryAfter == "" {
		cfg.RetryAfter = "1"
	}
	if cfg.NoRetryAfter {
		cfg.RetryAfter = "" // an empty header value is not sent
	}
	if cfg.Burst < 0 {
		return nil, fmt.Errorf("nginx: negative Burst %d", cfg.Burst)
	}
	if cfg.Status == 0 {
		cfg.Status = 429
	}
	if cfg.Status < 400 || cfg.Status > 599 {
		return nil, fmt.Errorf("nginx: Status %d: limit_req_status takes 400 to 599", cfg.Status)
	}
	if cfg.Listen, err = freeAddr(cfg.Listen); err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	if err := checkConf("nginx", "Rate", cfg.Rate, "Listen", cfg.Listen); err != nil {
		return nil, err
	}
	if cfg.LongBurst < 0 {
		return nil, fmt.Errorf("nginx: negative LongBurst %d", cfg.LongBurst)
	}
	if cfg.LongRate != "" {
		if err := checkConf("nginx", "LongRate", cfg.LongRate); err != nil {
			return nil, err
		}
	}
	if err := checkHostile(cfg); err != nil {
		return nil, err
	}
	if cfg.RetryAfter != "" {
		if err := checkConf("nginx", "RetryAfter", cfg.RetryAfter); err != nil {
			return nil, err
		}
	}
	tryFiles := ""
	if cfg.Fallback != "" {
		if err := checkConf("nginx", "Fallback", cfg.Fallback); err != nil {
			return nil, err
		}
		if _, ok := cfg.Files[cfg.Fallback]; !ok {
			return nil, fmt.Errorf("nginx: Fallback %q is not one of Files", cfg.Fallback)
		}
		// Files named before the last parameter are served in place, with
		// no internal redirect: the request is limited once, as any other.
		tryFiles = "\n            try_files $uri $uri/ /" + strings.TrimPrefix(cfg.Fallback, "/") + " =404;"
	}
	dir, err := newWorkDir(cfg.Dir, "nginx")
	if err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	if err := writeNginxFiles(dir, cfg, tryFiles); err != nil {
		dir.remove()
		return nil, err
	}
	errLog := dir.join("error.log")
	p, err := startProcess(procSpec{name: "nginx " + cfg.Listen, dir: dir, addr: cfg.Listen, logs: []string{errLog},
		bin: bin, args: []string{"-c", dir.join("nginx.conf"), "-p", dir.path, "-e", errLog, "-g", "daemon off;"}})
	if err != nil {
		return nil, err
	}
	return &Nginx{server: server{proc: p, addr: cfg.Listen, accessLog: dir.join("access.log")}, root: dir.join("www"), dir: dir}, nil
}

// writeNginxFiles writes the web root and nginx.conf into dir.
func writeNginxFiles(dir workDir, cfg NginxConfig, tryFiles string) error {
	www := dir.join("www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		return fmt.Errorf("nginx: %w", err)
	}
	files := map[string]string{
		"ip":         `<!--#echo var="remote_addr" -->`, // no trailing newline: the body is exactly the address
		"index.html": "exitgate peer\n",
	}
	for name, body := range cfg.Files {
		files[name] = body
	}
	for name, body := range files {
		p := filepath.Join(www, filepath.FromSlash(name))
		if !strings.HasPrefix(p, www+string(filepath.Separator)) {
			return fmt.Errorf("nginx: file %q escapes the web root", name)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("nginx: %w", err)
		}
		if err := writeFile(p, body, 0o644); err != nil {
			return fmt.Errorf("nginx: %w", err)
		}
	}
	return writeNginxConf(dir, cfg, tryFiles)
}

// writeNginxConf writes nginx.conf for cfg into dir.
func writeNginxConf(dir workDir, cfg NginxConfig, tryFiles string) error {
	burst := ""
	if cfg.Burst > 0 {
		burst = fmt.Sprintf(" burst=%d", cfg.Burst)
		if !cfg.Delay {
			burst += " nodelay"
		}
	}
	var block, slow strings.Builder
	for _, a := range cfg.Block {
		fmt.Fprintf(&block, "\n        %s 1;", a)
	}
	for _, a := range cfg.SlowAddrs {
		fmt.Fprintf(&slow, "\n        %s $binary_remote_addr;", a)
	}
	// A zone keyed on nothing limits nothing: rates for turns not used.
	slowRate, halfRate := cmp.Or(cfg.SlowRate, "1r/s"), cmp.Or(cfg.HalfRate, "1r/s")
	longRate, longKey, longBurst := cmp.Or(cfg.LongRate, "1r/s"), "", ""
	if cfg.LongRate != "" {
		longKey = "$binary_remote_addr"
		longBurst = " nodelay"
		if cfg.LongBurst > 0 {
			longBurst = fmt.Sprintf(" burst=%d nodelay", cfg.LongBurst)
		}
	}
	status, statusRetry := cmp.Or(cfg.Status, 429), ""
	if status != 429 {
		// The lockout turn still answers 429 with Retry-After; a map
		// names each value once.
		statusRetry = fmt.Sprintf(` %d "%s";`, status, cfg.RetryAfter)
	}
	conf := strings.NewReplacer(
		"{{dir}}", dir.path, "{{rate}}", cfg.Rate, "{{retry}}", cfg.RetryAfter,
		"{{listen}}", cfg.Listen, "{{burst}}", burst, "{{tryfiles}}", tryFiles,
		"{{block}}", block.String(), "{{slow}}", slow.String(), "{{slowrate}}", slowRate, "{{halfrate}}", halfRate,
		"{{blockpage}}", blockPage, "{{status}}", fmt.Sprint(status), "{{statusretry}}", statusRetry,
		"{{longrate}}", longRate, "{{longkey}}", longKey, "{{longburst}}", longBurst,
	).Replace(nginxConf)
	if err := writeFile(dir.join("nginx.conf"), conf, 0o644); err != nil {
		return fmt.Errorf("nginx: %w", err)
	}
	return nil
}

// Root returns the web root directory; files written there are served at
// once.
func (n *Nginx) Root() string { return n.root }
