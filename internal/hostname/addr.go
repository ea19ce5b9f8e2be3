package hostname

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// NumericIPv4 reads host as an IPv4 address written in one of the forms
// inet_aton accepts besides the dotted quad: one to four parts, each
// decimal, octal (a leading 0) or hexadecimal (0x), the last filling the
// bytes left (2130706433, 0x7f000001, 127.1, 0177.0.0.1 are all
// 127.0.0.1). A proxy that resolves names with getaddrinfo, as tinyproxy
// does, and browsers' URL parsers, read them so; netip does not, and a
// check that only knew dotted quads let such a name reach loopback.
func NumericIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 4 || host == "" {
		return netip.Addr{}, false
	}
	var v [4]uint64
	for i, p := range parts {
		if p == "" || p[0] == '+' || p[0] == '-' || strings.Contains(p, "_") {
			return netip.Addr{}, false
		}
		n, err := strconv.ParseUint(p, 0, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		v[i] = n
	}
	last := len(parts) - 1
	var u uint64
	for i := range last {
		if v[i] > 255 {
			return netip.Addr{}, false
		}
		u |= v[i] << (24 - 8*i)
	}
	if v[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	u |= v[last]
	return netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)}), true
}

// Address returns the host of a URL written the one way an address is
// keyed, when host (as url.URL.Hostname gives it: no brackets) is an
// address in any spelling: an IPv4 address as its dotted quad (127.1 and
// 2130706433 are 127.0.0.1), an IPv4-mapped IPv6 address as the IPv4
// address it maps ([::ffff:127.0.0.1] is 127.0.0.1: the same socket), any
// other IPv6 address in canonical form within brackets, its zone escaped
// as a URL writes it. Each spelling was a host of its own, with a ceiling
// of its own. ok is false for a name.
func Address(host string) (key string, ok bool) {
	if a, ok := NumericIPv4(host); ok {
		return a.String(), true
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return "", false
	}
	if a = a.Unmap(); a.Is4() {
		return a.String(), true
	}
	s := a.String()
	if z := a.Zone(); z != "" {
		s = strings.TrimSuffix(s, "%"+z) + "%25" + url.PathEscape(z)
	}
	return "[" + s + "]", true
}
