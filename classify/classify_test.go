package classify

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/exitgate/exitgate/internal/deptest"
	"github.com/exitgate/exitgate/verdict"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exitgate/exitgate/rlheader"
)

func TestClassify(t *testing.T) {
	ra := rlheader.Signal{HasRetryAfter: true, RetryAfter: time.Second}
	dry := rlheader.Signal{HasRemaining: true}
	some := rlheader.Signal{HasRemaining: true, Remaining: 3}
	var none rlheader.Signal
	cf := []byte("<!DOCTYPE html><title>Attention Required! | Cloudflare</title>")
	tests := []struct {
		status int
		sig    rlheader.Signal
		body   string
		rules  Rules
		want   verdict.Verdict
	}{
		{200, none, "", Rules{}, verdict.OK},
		{204, none, "", Rules{}, verdict.OK},
		{301, none, "", Rules{}, verdict.OK},
		{304, none, "", Rules{}, verdict.OK},
		{200, none, string(cf), Rules{}, verdict.OK}, // 200 bodies are not sniffed by default
		{200, none, string(cf), Rules{SniffStatuses: []int{200}}, verdict.Banned},
		{429, none, "", Rules{}, verdict.Throttled},
		{429, ra, "captcha", Rules{}, verdict.Throttled},
		{503, ra, "", Rules{}, verdict.Busy},
		{503, none, "Service overloaded", Rules{}, verdict.Busy},
		{503, none, string(cf), Rules{}, verdict.Banned},
		{503, none, "<title>Just a moment...</title>", Rules{}, verdict.Banned},
		{500, none, "", Rules{}, verdict.Retryable},
		{502, none, "", Rules{}, verdict.Retryable},
		{504, none, "", Rules{}, verdict.Retryable},
		{408, none, "", Rules{}, verdict.Retryable},
		{522, none, "", Rules{}, verdict.Retryable},
		{524, none, "", Rules{}, verdict.Retryable},
		{599, none, "", Rules{}, verdict.Retryable},
		{403, none, "", Rules{}, verdict.Forbidden}, // one URL's answer, not a ban
		{403, none, "<h1>Forbidden</h1> You don't have permission.", Rules{}, verdict.Forbidden},
		{403, none, "<TITLE>Access Denied</TITLE> Reference #18.", Rules{}, verdict.Banned},
		{403, ra, "", Rules{}, verdict.Throttled},  // GitHub secondary limits
		{403, dry, "", Rules{}, verdict.Throttled}, // GitHub primary limit: remaining 0
		{403, some, "", Rules{}, verdict.Forbidden},
		{403, dry, "<div id=\"px-captcha\">", Rules{}, verdict.Banned},
		{403, none, "", Rules{Status: map[int]verdict.Verdict{403: verdict.Throttled}}, verdict.Throttled},
		{403, none, string(cf), Rules{Status: map[int]verdict.Verdict{403: verdict.Throttled}}, verdict.Throttled},
		{503, none, "", Rules{Status: map[int]verdict.Verdict{503: verdict.Banned}}, verdict.Banned},
		{404, none, "", Rules{Status: map[int]verdict.Verdict{404: verdict.Retryable}}, verdict.Retryable},
		{407, none, "", Rules{}, verdict.ProxyFailure},
		{401, none, "", Rules{}, verdict.Fatal},
		{404, none, "", Rules{}, verdict.Fatal},
		{410, none, "", Rules{}, verdict.Fatal},
		{400, none, "", Rules{}, verdict.Fatal},
		{451, none, "", Rules{}, verdict.Fatal},
		{100, none, "", Rules{}, verdict.Retryable},
		{0, none, "", Rules{}, verdict.Retryable},
		{-1, none, "", Rules{}, verdict.Retryable},
		{999, none, "", Rules{}, verdict.Retryable},
		// Markers: custom, case, and the sniff bound.
		{503, none, "geh weg", Rules{Markers: []string{"geh weg"}}, verdict.Banned},
		{503, none, string(cf), Rules{Markers: []string{"geh weg"}}, verdict.Busy},
		{503, none, "DataDome", Rules{}, verdict.Banned},
		{503, none, strings.Repeat(" ", 5000) + "captcha", Rules{}, verdict.Busy},
		{503, none, strings.Repeat(" ", 5000) + "captcha", Rules{SniffBytes: 8000}, verdict.Banned},
		{503, none, "capt", Rules{}, verdict.Busy},
	}
	for _, tt := range tests {
		got := Response(tt.status, tt.sig, []byte(tt.body), tt.rules)
		if got != tt.want {
			t.Errorf("Response(%d, %+v, %.40q, %+v) = %v, want %v", tt.status, tt.sig, tt.body, tt.rules, got, tt.want)
		}
	}
}

func TestClassifyWithParsedSignal(t *testing.T) {
	h := http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1774540900"}}
	sig := rlheader.Parse(h, time.Unix(1774540800, 0), rlheader.Profile{})
	if got := Response(403, sig, nil, Rules{}); got != verdict.Throttled {
		t.Errorf("Response(403, GitHub remaining 0) = %v, want throttled", got)
	}
}

func TestClassifyErrorSynthetic(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want verdict.Verdict
	}{
		{"nil", nil, verdict.OK},
		{"timeout", &url.Error{Op: "Get", URL: "http://x", Err: &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}}, verdict.Retryable},
		{"context deadline", fmt.Errorf("fetch: %w", context.DeadlineExceeded), verdict.Retryable},
		{"reset", &url.Error{Op: "Get", Err: &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}, verdict.Retryable},
		{"refused by target", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, verdict.Retryable},
		{"source address not here", &url.Error{Op: "Get", Err: &net.OpError{Op: "dial", Err: os.NewSyscallError("bind", syscall.EADDRNOTAVAIL)}}, verdict.ProxyFailure},
		{"unexpected EOF", &url.Error{Op: "Get", Err: io.ErrUnexpectedEOF}, verdict.Retryable},
		{"proxyconnect dial", &url.Error{Op: "Get", Err: &net.OpError{Op: "proxyconnect", Net: "tcp",
			Err: &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}}, verdict.ProxyFailure},
		{"proxyconnect timeout", &net.OpError{Op: "proxyconnect", Err: os.ErrDeadlineExceeded}, verdict.ProxyFailure},
		{"typed CONNECT refusal", &url.Error{Op: "Get", Err: &ProxyConnectError{StatusCode: 403, Status: "403 Forbidden"}}, verdict.ProxyFailure},
		{"a working proxy denies this target", &url.Error{Op: "Get", Err: &TargetDeniedError{Proxy: "p:1", StatusCode: 403}}, verdict.Forbidden},
		{"typed CONNECT credentials", &url.Error{Op: "Get", Err: &ProxyConnectError{StatusCode: 407, Status: "407 Proxy Authentication Required"}}, verdict.ProxyFailure},
		// The proxy answered, and could not reach the target: the target's.
		{"CONNECT: unable to connect", &url.Error{Op: "Get", Err: &ProxyConnectError{StatusCode: 500, Status: "500 Unable to connect"}}, verdict.Retryable},
		{"CONNECT: bad gateway", &ProxyConnectError{StatusCode: 502, Status: "502 Bad Gateway"}, verdict.Retryable},
		{"CONNECT: service unavailable", &ProxyConnectError{StatusCode: 503, Status: "503 Service Unavailable"}, verdict.Retryable},
		{"CONNECT: gateway timeout", &ProxyConnectError{StatusCode: 504, Status: "504 Gateway Timeout"}, verdict.Retryable},
		{"untyped CONNECT: bad gateway", &url.Error{Op: "Get", Err: errors.New("Bad Gateway")}, verdict.Retryable},
		// A proxy a check found at fault stays the proxy's, whatever it answered.
		{"proxy at fault, CONNECT 502", &ProxyError{Proxy: "p:1", Why: "no answer within 5s", Err: &ProxyConnectError{StatusCode: 502, Status: "502 Bad Gateway"}}, verdict.ProxyFailure},
		{"proxy found at fault", &url.Error{Op: "Get", Err: &ProxyError{Proxy: "p:1", Why: "no answer within 5s", Err: context.DeadlineExceeded}}, verdict.ProxyFailure},
		{"untyped CONNECT refusal", &url.Error{Op: "Get", Err: errors.New("Proxy Authentication Required")}, verdict.ProxyFailure},
		{"no such host", &url.Error{Op: "Get", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}}, verdict.Fatal},
		{"DNS timeout", &net.DNSError{Err: "i/o timeout", IsTimeout: true}, verdict.Retryable},
		{"other", errors.New("something odd"), verdict.Retryable},
	}
	for _, tt := range tests {
		if got := Error(tt.err); got != tt.want {
			t.Errorf("%s: Error(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// TestClassifyErrorRealTransport makes net/http produce the errors on
// loopback: a dead proxy, and a proxy that refuses CONNECT with 407, with
// and without ProxyConnectHook.
func TestClassifyErrorRealTransport(t *testing.T) {
	// A port nothing listens on: listen, note the address, close.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()

	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusProxyAuthRequired)
	}))
	defer refusing.Close()

	get := func(proxy string, hook bool) error {
		pu, _ := url.Parse(proxy)
		tr := &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{}}
		if hook {
			tr.OnProxyConnectResponse = ProxyConnectHook
		}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		resp, err := c.Get("https://target.invalid/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}

	err = get("http://"+dead, false)
	if got := Error(err); got != verdict.ProxyFailure {
		t.Errorf("Error(dead proxy: %v) = %v, want proxy_failure", err, got)
	}
	err = get(refusing.URL, false)
	if got := Error(err); got != verdict.ProxyFailure {
		t.Errorf("Error(CONNECT 407 untyped: %v) = %v, want proxy_failure", err, got)
	}
	err = get(refusing.URL, true)
	var pce *ProxyConnectError
	if !errors.As(err, &pce) || pce.StatusCode != 407 {
		t.Errorf("with ProxyConnectHook, error = %v, want a *ProxyConnectError with 407", err)
	}
	if got := Error(err); got != verdict.ProxyFailure {
		t.Errorf("Error(CONNECT 407 typed: %v) = %v, want proxy_failure", err, got)
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []int{200, 301, 403, 404, 407, 408, 429, 500, 503, 522, 0, -1, 999} {
		f.Add(s, "", false, false, int64(0), 0, "")
		f.Add(s, "<title>Attention Required! | Cloudflare</title>", true, true, int64(0), 10, "captcha")
	}
	f.Fuzz(func(t *testing.T, status int, body string, hasRA, hasRem bool, rem int64, sniff int, marker string) {
		sig := rlheader.Signal{HasRetryAfter: hasRA, HasRemaining: hasRem, Remaining: rem}
		r := Rules{SniffBytes: sniff, SniffStatuses: []int{status}}
		if marker != "" {
			r.Markers = []string{strings.ToLower(marker)}
		}
		v := Response(status, sig, []byte(body), r)
		if int(v) >= len(verdict.All()) {
			t.Fatalf("Response(%d, %q) = %v, not a verdict", status, body, v)
		}
		if v2 := Response(status, rlheader.Signal{}, []byte(body), Rules{}); int(v2) >= len(verdict.All()) {
			t.Fatalf("Response(%d, nil sig) = %v", status, v2)
		}
		r.Status = map[int]verdict.Verdict{status: verdict.Fatal}
		if v := Response(status, sig, []byte(body), r); v != verdict.Fatal {
			t.Fatalf("Classify with override = %v, want fatal", v)
		}
	})
}

// TestImports keeps classify light: the standard library, the verdict enum,
// rlheader and the structured-fields parser rlheader uses, nothing else.
func TestImports(t *testing.T) {
	deptest.Only(t, "github.com/exitgate/exitgate/verdict", "github.com/exitgate/exitgate/rlheader", "github.com/dunglas/httpsfv")
}
