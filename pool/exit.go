// Package pool holds exits: the identities a target server sees. It parses proxy lists
// in the common formats, expands sticky-session gateway templates and local source
// address ranges, builds one http.Transport per exit, resolves each exit's public IP
// (Identity) and checks a whole pool (Check).
//
// Credentials never leave an Exit in text form: ID, String, GoString, LogValue,
// MarshalJSON and every error this package returns omit the password. Only ProxyURL and
// the transports it feeds carry it.
package pool

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// Kind says how an exit reaches the target.
type Kind uint8

const (
	// Direct connects from the host's default source address.
	Direct Kind = iota
	// Proxy sends through an HTTP, HTTPS or SOCKS5 proxy.
	Proxy
	// Bind connects from a chosen local source address, without a proxy.
	Bind
)

func (k Kind) String() string {
	switch k {
	case Direct:
		return "direct"
	case Proxy:
		return "proxy"
	case Bind:
		return "bind"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Exit is one identity a target sees: a proxy, a sticky session on a rotating gateway,
// a local source address, or a direct connection. The zero value is the direct exit.
// An Exit is immutable and safe for concurrent use; copy it freely.
type Exit struct {
	id      string
	kind    Kind
	proxy   *url.URL   // Proxy only; never mutated, may carry credentials
	local   netip.Addr // Bind only
	session string     // template sessions only
}

// DirectExit returns the exit that connects without proxy or chosen source address.
func DirectExit() Exit { return Exit{} }

// BindExit returns an exit that connects from the local source address a.
func BindExit(a netip.Addr) Exit {
	a = a.Unmap()
	return Exit{id: "bind:" + a.String(), kind: Bind, local: a}
}

// ID returns the exit's stable identifier, which never contains credentials:
// "direct", "bind:127.0.0.11", "proxy.example:8080", "[2001:db8::1]:1080",
// "gw.example:7777#session-7", or "host:port#u-1a2b3c4d" when several exits share one
// proxy address with different user names.
func (e Exit) ID() string {
	if e.kind == Direct {
		return "direct"
	}
	return e.id
}

// Kind returns how the exit connects.
func (e Exit) Kind() Kind { return e.kind }

// LocalAddr returns the local source address of a Bind exit, and the zero Addr otherwise.
func (e Exit) LocalAddr() netip.Addr { return e.local }

// CheckLocal reports whether a Bind exit's source address is one of this
// machine's (nil for other exits): a socket is bound to it and closed,
// nothing is sent. An address not assigned here fails every request on
// the exit, and the crawl would charge each one to its URL.
func (e Exit) CheckLocal() error {
	if e.kind != Bind {
		return nil
	}
	c, err := net.ListenPacket("udp", netip.AddrPortFrom(e.local, 0).String())
	if err != nil {
		return fmt.Errorf("%s: %s is not an address of this machine (%w)", e.id, e.local, err)
	}
	return c.Close()
}

// Session returns the session name of a template exit ("7"), or "".
func (e Exit) Session() string { return e.session }

// ProxyURL returns a copy of the proxy URL, including credentials, or nil if the exit is
// not a proxy. Treat the result as a secret: never log or print it.
func (e Exit) ProxyURL() *url.URL {
	if e.proxy == nil {
		return nil
	}
	u := *e.proxy
	if e.proxy.User != nil {
		ui := *e.proxy.User
		u.User = &ui
	}
	return &u
}

// ForwardsHTTP reports whether the exit is an HTTP or HTTPS proxy, to which a
// plain-http request goes whole (absolute-form): a 407 answering one is the
// proxy's refusal. Through a SOCKS5 proxy, and for https (a CONNECT tunnel),
// the proxy refuses at the dial instead, and a 407 that comes back is the
// server's.
func (e Exit) ForwardsHTTP() bool {
	return e.kind == Proxy && e.proxy != nil && (e.proxy.Scheme == "http" || e.proxy.Scheme == "https")
}

// HasCredentials reports whether the exit authenticates to its proxy.
func (e Exit) HasCredentials() bool { return e.proxy != nil && e.proxy.User != nil }

// String returns a printable form with the password redacted:
// "http://user:***@proxy.example:8080", "bind:127.0.0.11", "direct".
func (e Exit) String() string {
	switch e.kind {
	case Proxy:
		return redactURL(e.proxy)
	case Bind:
		return e.id
	}
	return "direct"
}

// GoString keeps %#v from printing the password.
func (e Exit) GoString() string { return fmt.Sprintf("pool.Exit(%q)", e.String()) }

// LogValue keeps slog from printing the password.
func (e Exit) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", e.ID()), slog.String("exit", e.String()))
}

// MarshalJSON encodes the exit as {"id":…,"kind":…,"proxy":…} with the password
// redacted.
func (e Exit) MarshalJSON() ([]byte, error) {
	v := struct {
		ID      string `json:"id"`
		Kind    string `json:"kind"`
		Proxy   string `json:"proxy,omitempty"`
		Local   string `json:"local,omitempty"`
		Session string `json:"session,omitempty"`
	}{ID: e.ID(), Kind: e.kind.String(), Session: e.session}
	if e.kind == Proxy {
		v.Proxy = redactURL(e.proxy)
	}
	if e.local.IsValid() {
		v.Local = e.local.String()
	}
	return json.Marshal(v)
}

// Scrub replaces the exit's password (raw and percent-encoded) in s with "***". Use it
// on text that came from elsewhere, such as errors from a proxy library, before
// printing it.
func (e Exit) Scrub(s string) string {
	if !e.HasCredentials() {
		return s
	}
	pw, ok := e.proxy.User.Password()
	if !ok || pw == "" {
		return s
	}
	// Longest first, so a raw password inside its own escaped form is caught whole.
	secrets := []string{
		url.UserPassword("x", pw).String()[2:], // userinfo escaping
		url.QueryEscape(pw),
		url.PathEscape(pw),
		pw,
	}
	slices.SortStableFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, secret := range secrets {
		if len(secret) >= wholeSecret {
			s = strings.ReplaceAll(s, secret, "***")
		} else {
			s = replaceWord(s, secret, "***")
		}
	}
	return s
}

// wholeSecret is the length from which a password is masked wherever it
// appears; a shorter one only where it stands apart from letters and
// digits: a password "s" made "connection refu***ed" of a message, and
// "0" made "4***1", each showing where the password was.
const wholeSecret = 6

// replaceWord replaces the occurrences of old in s that no letter or digit
// touches on either side.
func replaceWord(s, old, repl string) string {
	if old == "" {
		return s
	}
	alnum := func(b byte) bool { return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }
	var out strings.Builder
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], old)
		if j < 0 {
			out.WriteString(s[i:])
			break
		}
		j += i
		end := j + len(old)
		if (j == 0 || !alnum(s[j-1])) && (end == len(s) || !alnum(s[end])) {
			out.WriteString(s[i:j])
			out.WriteString(repl)
		} else {
			out.WriteString(s[i:end])
		}
		i = end
	}
	return out.String()
}

// redactURL formats u as scheme://user:***@host:port; it never includes a path, which
// proxy URLs do not use.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	if u.User != nil {
		b.WriteString(url.PathEscape(u.User.Username()))
		if _, ok := u.User.Password(); ok {
			b.WriteString(":***")
		}
		b.WriteString("@")
	}
	b.WriteString(u.Host)
	return b.String()
}
