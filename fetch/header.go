package fetch

import (
	"net/url"
	"strings"
)

// credentialHeader lists the request headers (canonical keys) that
// EngineConfig.Header sends only to the job's own host, never on to the
// host a redirect leads to.
var credentialHeader = map[string]bool{"Authorization": true, "Cookie": true, "Cookie2": true, "Proxy-Authorization": true}

// sameHost reports whether two URLs name the same host and port (scheme
// default ports aside), case-insensitively. Unparseable URLs are never the
// same.
func sameHost(a, b string) bool {
	ua, err := url.Parse(a)
	if err != nil {
		return false
	}
	ub, err := url.Parse(b)
	if err != nil {
		return false
	}
	return strings.EqualFold(ua.Hostname(), ub.Hostname()) && portOf(ua) == portOf(ub)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}
