package server

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// KeyBy names what a site keys its limit on.
type KeyBy uint8

const (
	// KeyIP keys on the client address the site sees (the exit).
	KeyIP KeyBy = iota
	// KeyProxyUser keys on the username the client gave its proxy: the
	// site sees it only when the proxy forwards Proxy-Authorization (the
	// simulated exits can), or in virtual time through SimRequest.ProxyUser.
	KeyProxyUser
	// KeyHeader keys on the value of a request header (Key.Header), such
	// as Authorization or X-Api-Key.
	KeyHeader
	// KeyCookie keys on the value of a cookie (Key.Cookie).
	KeyCookie
	// KeySite keys every request on one key: a site-wide limit.
	KeySite
)

var keyByNames = [...]string{KeyIP: "ip", KeyProxyUser: "proxy-user", KeyHeader: "header", KeyCookie: "cookie", KeySite: "site"}

// String returns the kebab-case name.
func (k KeyBy) String() string {
	if int(k) < len(keyByNames) {
		return keyByNames[k]
	}
	return fmt.Sprintf("keyby(%d)", uint8(k))
}

// KeySpec says how a site derives the limiter key of a request. The zero
// value keys on the client IP.
type KeySpec struct {
	By KeyBy
	// Header is the header KeyHeader reads; default "Authorization".
	Header string
	// Cookie is the cookie KeyCookie reads; default "session".
	Cookie string
}

func (k KeySpec) withDefaults() KeySpec {
	if k.Header == "" {
		k.Header = "Authorization"
	}
	k.Header = http.CanonicalHeaderKey(k.Header)
	if k.Cookie == "" {
		k.Cookie = "session"
	}
	return k
}

// siteKey is the single key of a site-wide limit.
const siteKey = "site"

// key returns the limiter key of r. A request that lacks the credential or
// cookie the site keys on falls back to its IP, as real sites limit
// anonymous clients by address.
func (k KeySpec) key(r *SimRequest) string {
	if r.Key != "" {
		return r.Key
	}
	switch k.By {
	case KeySite:
		return siteKey
	case KeyProxyUser:
		u := r.ProxyUser
		if u == "" && r.Header != nil {
			u = ProxyUser(r.Header.Get("Proxy-Authorization"))
		}
		if u != "" {
			return u
		}
	case KeyHeader:
		if r.Header != nil {
			if v := r.Header.Get(k.Header); v != "" {
				return v
			}
		}
	case KeyCookie:
		if r.Header != nil {
			if v := cookieValue(r.Header, k.Cookie); v != "" {
				return v
			}
		}
	}
	return r.IP
}

func cookieValue(h http.Header, name string) string {
	for _, line := range h["Cookie"] {
		cs, err := http.ParseCookie(line)
		if err != nil {
			continue
		}
		for _, c := range cs {
			if c.Name == name {
				return c.Value
			}
		}
	}
	return ""
}

// ProxyUser returns the username of a Basic Proxy-Authorization value, or
// "" when v is absent or malformed. It never panics.
func ProxyUser(v string) string {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "basic") {
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return ""
	}
	user, _, ok := strings.Cut(string(raw), ":")
	if !ok {
		return ""
	}
	return user
}

// hostOf returns the host part of a RemoteAddr ("127.0.0.11:5432").
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
