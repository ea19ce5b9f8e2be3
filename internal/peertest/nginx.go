package peertest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NginxConfig configures a rate-limited nginx target. The zero value is the reference
// target of local-peers.md: 1r/s per client address, no burst, Retry-After: 1.
type NginxConfig struct {
	// Rate is the limit_req_zone rate per client address, e.g. "1r/s" or "30r/m".
	// Empty means "1r/s".
	Rate string
	// Burst is the limit_req burst. Zero means none. A positive burst is served with
	// nodelay, so excess requests are rejected with 429 instead of queued.
	Burst int
	// RetryAfter is the fixed Retry-After value sent with every 429 (nginx cannot
	// compute one). Empty means "1".
	RetryAfter string
	// Listen is the address to listen on. Empty means 127.0.0.1 on a free port.
	Listen string
	// Files are extra files to serve, keyed by path relative to the web root
	// (e.g. "a/b.txt"). Text files are processed by SSI, so a body may contain
	// <!--#echo var="remote_addr" -->.
	Files map[string]string
}

// Nginx is a running nginx that limits requests per client address ($binary_remote_addr)
// with status 429 and serves files from its web root. GET /ip answers with the client
// address (via SSI) and is limited like every other path. It is safe for concurrent use.
type Nginx struct {
	addr      string
	root      string
	accessLog string
}

// AccessEntry is one parsed access-log line.
type AccessEntry struct {
	RemoteAddr string // the client address nginx saw, i.e. the exit
	Status     int    // the response status
	Limit      string // $limit_req_status: PASSED, REJECTED, DELAYED, ... or "-"
	Request    string // the request line, e.g. "GET /ip HTTP/1.1"
}

// master_process off keeps nginx to one process: SIGKILL then leaves no orphaned worker
// behind for an init that may not reap zombies.
const nginxConf = `master_process off;
worker_processes 1;
pid {{dir}}/nginx.pid;
error_log {{dir}}/error.log notice;
events { worker_connections 256; }
http {
    default_type text/plain;
    client_body_temp_path {{dir}}/tmp_body;  proxy_temp_path {{dir}}/tmp_proxy;
    fastcgi_temp_path {{dir}}/tmp_fcgi;      uwsgi_temp_path {{dir}}/tmp_uwsgi;
    scgi_temp_path {{dir}}/tmp_scgi;
    log_format peer '$remote_addr $status limit=$limit_req_status "$request"';
    access_log {{dir}}/access.log peer;
    limit_req_zone $binary_remote_addr zone=perip:1m rate={{rate}};
    limit_req_status 429;
    map $status $retry_after { 429 "{{retry}}"; default ""; }
    server {
        listen {{listen}};
        root {{dir}}/www;
        location / {
            limit_req zone=perip{{burst}};
            add_header Retry-After $retry_after always;
            ssi on; ssi_types text/plain;
            index index.html;
        }
    }
}
`

// confValue matches values safe to paste into nginx.conf unquoted.
var confValue = regexp.MustCompile(`^[A-Za-z0-9./:\[\]_-]+$`)

// StartNginx starts nginx with cfg and returns once it accepts connections.
func StartNginx(t testing.TB, cfg NginxConfig) *Nginx {
	t.Helper()
	bin := Require(t, "nginx")
	if cfg.Rate == "" {
		cfg.Rate = "1r/s"
	}
	if cfg.RetryAfter == "" {
		cfg.RetryAfter = "1"
	}
	if cfg.Listen == "" {
		cfg.Listen = hostPort("127.0.0.1", FreePort(t))
	}
	if cfg.Burst < 0 {
		t.Fatalf("StartNginx: negative Burst %d", cfg.Burst)
	}
	for name, v := range map[string]string{"Rate": cfg.Rate, "RetryAfter": cfg.RetryAfter, "Listen": cfg.Listen} {
		if !confValue.MatchString(v) {
			t.Fatalf("StartNginx: %s %q has characters nginx.conf cannot take unquoted", name, v)
		}
	}
	dir := sharedDir(t)
	www := filepath.Join(dir, "www")
	if err := os.Mkdir(www, 0o755); err != nil {
		t.Fatal(err)
	}
	// No trailing newline: the body is exactly the address.
	writeFile(t, filepath.Join(www, "ip"), `<!--#echo var="remote_addr" -->`, 0o644)
	writeFile(t, filepath.Join(www, "index.html"), "exitgate peer\n", 0o644)
	for name, body := range cfg.Files {
		p := filepath.Join(www, filepath.FromSlash(name))
		if !strings.HasPrefix(p, www+string(filepath.Separator)) {
			t.Fatalf("StartNginx: file %q escapes the web root", name)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, body, 0o644)
	}
	burst := ""
	if cfg.Burst > 0 {
		burst = fmt.Sprintf(" burst=%d nodelay", cfg.Burst)
	}
	conf := strings.NewReplacer(
		"{{dir}}", dir, "{{rate}}", cfg.Rate, "{{retry}}", cfg.RetryAfter,
		"{{listen}}", cfg.Listen, "{{burst}}", burst,
	).Replace(nginxConf)
	confPath := filepath.Join(dir, "nginx.conf")
	writeFile(t, confPath, conf, 0o644)
	errLog := filepath.Join(dir, "error.log")
	start(t, "nginx", dir, cfg.Listen, []string{errLog}, bin,
		"-c", confPath, "-p", dir, "-e", errLog, "-g", "daemon off;")
	return &Nginx{addr: cfg.Listen, root: www, accessLog: filepath.Join(dir, "access.log")}
}

// Addr returns the host:port nginx listens on.
func (n *Nginx) Addr() string { return n.addr }

// URL returns the base URL, e.g. "http://127.0.0.1:40123", without a trailing slash.
func (n *Nginx) URL() string { return "http://" + n.addr }

// Root returns the web root directory; files written there are served at once.
func (n *Nginx) Root() string { return n.root }

// AccessLog returns the access log once it holds at least want lines, polling for up to
// StartTimeout. nginx writes a line just after the response is sent, so a client that
// has read its response may be a moment ahead of the log; pass the number of requests
// made. want 0 returns what is there now.
func (n *Nginx) AccessLog(t testing.TB, want int) []AccessEntry {
	t.Helper()
	deadline := time.Now().Add(StartTimeout)
	for {
		out, err := n.readAccessLog()
		if err != nil {
			t.Fatalf("AccessLog: %v", err)
		}
		if len(out) >= want {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("AccessLog: %d lines after %v, want %d", len(out), StartTimeout, want)
		}
		time.Sleep(5 * time.Millisecond) // polling a file nginx appends to; bounded above
	}
}

func (n *Nginx) readAccessLog() ([]AccessEntry, error) {
	f, err := os.Open(n.accessLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AccessEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasSuffix(line, `"`) {
			break // a line still being written
		}
		e, err := ParseAccessLine(line)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// ParseAccessLine parses one line of the format
// `$remote_addr $status limit=$limit_req_status "$request"`.
func ParseAccessLine(line string) (AccessEntry, error) {
	addr, rest, ok1 := strings.Cut(line, " ")
	status, rest, ok2 := strings.Cut(rest, " ")
	limit, rest, ok3 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !ok3 || !strings.HasPrefix(limit, "limit=") {
		return AccessEntry{}, fmt.Errorf("access log line %q: want `addr status limit=X \"request\"`", line)
	}
	code, err := strconv.Atoi(status)
	if err != nil {
		return AccessEntry{}, fmt.Errorf("access log line %q: status: %v", line, err)
	}
	if net.ParseIP(addr) == nil {
		return AccessEntry{}, fmt.Errorf("access log line %q: bad address", line)
	}
	req, err := strconv.Unquote(rest)
	if err != nil {
		req = strings.Trim(rest, `"`) // nginx escapes as \xHH, which Go may not accept
	}
	return AccessEntry{RemoteAddr: addr, Status: code, Limit: strings.TrimPrefix(limit, "limit="), Request: req}, nil
}
