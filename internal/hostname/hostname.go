// Package hostname writes a URL's host the way it goes on the wire: an
// internationalised name in its ASCII (punycode) form, as Go's HTTP client
// sends and resolves it (net/http's idnaASCII, the IDNA lookup profile), so
// that "bücher.example" and "xn--bcher-kva.example", one server, are one
// host to the frontier's deduplication and to the limiter's budgets.
package hostname

import (
	"fmt"
	"strings"

	"golang.org/x/net/idna"
)

// ASCII returns host (a name without port or brackets) lowercased, and in
// its punycode form where it has non-ASCII characters. A name the IDNA
// lookup profile refuses is an error naming why: Go's client would send it
// as given and no resolver would find it.
func ASCII(host string) (string, error) {
	if isASCII(host) {
		return strings.ToLower(host), nil
	}
	a, err := idna.Lookup.ToASCII(host)
	if err != nil {
		return "", fmt.Errorf("host %q is no valid internationalised name: %v", host, err)
	}
	if a == "" {
		// Only characters the mapping drops (a zero-width space): no
		// name left, and the URL's key was "http:///".
		return "", fmt.Errorf("host %q is no name: nothing is left of it once mapped", host)
	}
	return strings.ToLower(a), nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
