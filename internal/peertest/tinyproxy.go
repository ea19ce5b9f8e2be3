package peertest

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TinyproxyConfig configures one tinyproxy exit. The zero value binds outgoing
// connections to 127.0.0.11 and needs no credentials.
type TinyproxyConfig struct {
	// Bind is the local source address of outgoing connections: what a target sees as
	// the exit IP. Empty means 127.0.0.11.
	Bind string
	// User and Password, when User is set, make tinyproxy demand Basic proxy
	// authentication and answer 407 otherwise.
	User, Password string
}

// Proxy is a running forward proxy on 127.0.0.1. It is safe for concurrent use.
type Proxy struct {
	addr, bind     string
	user, password string
}

// StartTinyproxy starts tinyproxy in the foreground with cfg and returns once it accepts
// connections.
func StartTinyproxy(t testing.TB, cfg TinyproxyConfig) *Proxy {
	t.Helper()
	bin := Require(t, "tinyproxy")
	if cfg.Bind == "" {
		cfg.Bind = "127.0.0.11"
	}
	if !confValue.MatchString(cfg.Bind) {
		t.Fatalf("StartTinyproxy: bad Bind %q", cfg.Bind)
	}
	if strings.ContainsAny(cfg.User+cfg.Password, " \t\r\n\"") {
		t.Fatalf("StartTinyproxy: credentials with spaces or quotes are not supported")
	}
	dir := sharedDir(t)
	port := FreePort(t)
	logPath := filepath.Join(dir, "tinyproxy.log")
	// tinyproxy drops to nobody when started as root and must still write its log.
	writeFile(t, logPath, "", 0o666)
	var conf strings.Builder
	if os.Geteuid() == 0 {
		conf.WriteString("User nobody\nGroup nogroup\n")
	}
	conf.WriteString("Listen 127.0.0.1\nPort " + strconv.Itoa(port) + "\n")
	conf.WriteString("Bind " + cfg.Bind + "\n")
	conf.WriteString("Timeout 30\nMaxClients 50\nLogLevel Info\n")
	conf.WriteString(`LogFile "` + logPath + `"` + "\n")
	conf.WriteString("Allow 127.0.0.1\nDisableViaHeader Yes\n")
	if cfg.User != "" {
		conf.WriteString("BasicAuth " + cfg.User + " " + cfg.Password + "\n")
	}
	confPath := filepath.Join(dir, "tinyproxy.conf")
	writeFile(t, confPath, conf.String(), 0o644)
	addr := hostPort("127.0.0.1", port)
	start(t, "tinyproxy", dir, addr, []string{logPath}, bin, "-d", "-c", confPath)
	return &Proxy{addr: addr, bind: cfg.Bind, user: cfg.User, password: cfg.Password}
}

// Addr returns the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

// Bind returns the outgoing address, the exit IP a target sees.
func (p *Proxy) Bind() string { return p.bind }

// URL returns the proxy URL, with the configured credentials if any,
// e.g. "http://user:pass@127.0.0.1:40123".
func (p *Proxy) URL() string {
	u := url.URL{Scheme: "http", Host: p.addr}
	if p.user != "" {
		u.User = url.UserPassword(p.user, p.password)
	}
	return u.String()
}
