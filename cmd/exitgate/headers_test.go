package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exitgate/exitgate/classify"
	"github.com/exitgate/exitgate/internal/rawhead"

	"github.com/exitgate/exitgate/rlheader"
)

// runHeadersCmd runs `exitgate headers args...` with stdin and returns
// stdout, stderr and the error.
func runHeadersCmd(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"headers"}, args...))
	err := root.Execute()
	return out.String(), errOut.String(), err
}

func headersJSON(t *testing.T, stdin string, args ...string) map[string]any {
	t.Helper()
	out, _, err := runHeadersCmd(t, stdin, append([]string{"--json", "--now", "2026-03-26T16:00:02Z"}, args...)...)
	if err != nil {
		t.Fatalf("headers %v: %v", args, err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("headers %v: output is not JSON: %v\n%s", args, err, out)
	}
	return m
}

// jsonEq compares a decoded JSON value with a Go literal via its encoding.
func jsonEq(got, want any) bool {
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	return bytes.Equal(g, w)
}

func TestHeadersExamples(t *testing.T) {
	// --now is two seconds after the servers' Date: times measured from
	// Date cancel that skew.
	tests := []struct {
		file string
		want map[string]any
	}{
		{"429-github.txt", map[string]any{
			"status": 429, "verdict": "throttled", "retry_after_seconds": nil, "limit": 5000, "remaining": 0,
			"window_seconds": nil, "reset_seconds": 1800, "wait_seconds": 1800, "scope": "unknown",
			"reset_at": "2026-03-26T16:30:02Z",
			"sources":  map[string]string{"limit": "x-ratelimit-limit", "remaining": "x-ratelimit-remaining", "reset": "x-ratelimit-reset"},
			"policies": []map[string]any{{"name": "core", "quota": 5000, "window_seconds": nil, "unit": "requests", "partition": nil,
				"remaining": 0, "reset_seconds": 1800, "source": "x-ratelimit-limit"}},
			"ignored": []any{},
		}},
		{"429-discord.txt", map[string]any{
			"status": 429, "verdict": "throttled", "retry_after_seconds": 1, "limit": 5, "remaining": 0,
			"reset_seconds": 1.357, "scope": "per-user", "bucket": "abcd1234efgh5678",
			"sources": map[string]string{"retry_after": "Retry-After", "limit": "X-RateLimit-Limit", "remaining": "X-RateLimit-Remaining",
				"reset": "X-RateLimit-Reset-After", "scope": "X-RateLimit-Scope", "bucket": "X-RateLimit-Bucket"},
		}},
		{"200-ietf.txt", map[string]any{
			"status": 200, "verdict": "ok", "retry_after_seconds": nil, "limit": 1000, "remaining": 12,
			"window_seconds": 86400, "reset_seconds": 24000, "wait_seconds": nil,
			"sources": map[string]string{"limit": "RateLimit-Policy", "remaining": "RateLimit", "reset": "RateLimit", "window": "RateLimit-Policy"},
			"policies": []map[string]any{
				{"name": "burst", "quota": 100, "window_seconds": 60, "unit": "requests", "partition": nil, "remaining": 93, "reset_seconds": 41, "source": "RateLimit-Policy"},
				{"name": "daily", "quota": 1000, "window_seconds": 86400, "unit": "requests", "partition": nil, "remaining": 12, "reset_seconds": 24000, "source": "RateLimit-Policy"},
			},
		}},
		{"429-shopify.txt", map[string]any{
			"status": 429, "verdict": "throttled", "retry_after_seconds": 2, "limit": 40, "remaining": 0,
			"reset_seconds": nil, "wait_seconds": 2, "retry_at": "2026-03-26T16:00:04Z",
			"sources": map[string]string{"retry_after": "Retry-After", "limit": "X-Shopify-Shop-Api-Call-Limit", "remaining": "X-Shopify-Shop-Api-Call-Limit"},
		}},
		{"200-plain.txt", map[string]any{
			"status": 200, "verdict": "ok", "retry_after_seconds": nil, "limit": nil, "remaining": nil,
			"window_seconds": nil, "reset_seconds": nil, "policies": []any{}, "sources": map[string]string{},
			"ignored": []any{}, "scope": "unknown", "server_date": nil,
		}},
		{"503-challenge.txt", map[string]any{"status": 503, "verdict": "banned"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got := headersJSON(t, "", filepath.Join("..", "..", "examples", "heads", tt.file))
			for _, k := range []string{"status", "verdict", "retry_after_seconds", "limit", "remaining", "window_seconds",
				"reset_seconds", "policies", "sources", "ignored"} {
				if _, ok := got[k]; !ok {
					t.Errorf("headers --json %s: key %q missing", tt.file, k)
				}
			}
			for k, want := range tt.want {
				if !jsonEq(got[k], want) {
					g, _ := json.Marshal(got[k])
					w, _ := json.Marshal(want)
					t.Errorf("headers --json %s: %s = %s, want %s", tt.file, k, g, w)
				}
			}
		})
	}
}

func TestHeadersPlain(t *testing.T) {
	out, _, err := runHeadersCmd(t, "", "--now", "2026-03-26T16:00:00Z", "../../examples/heads/429-discord.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Too Many Requests", "throttled", "wait 1s before the next request on this lane (Retry-After)",
		"limit      5 (X-RateLimit-Limit)", "in 1.357s", "X-RateLimit-Reset-After", "per-user",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("headers 429-discord.txt output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runHeadersCmd(t, "", "--now", "2026-03-26T16:00:00Z", "../../examples/heads/429-github.txt")
	if err != nil || !strings.Contains(out, "wait 30m0s before the next request on this lane (quota exhausted until the reset, x-ratelimit-reset)") {
		t.Errorf("headers 429-github.txt = %v\n%s", err, out)
	}
}

func TestHeadersMalformedAndEdgeInputs(t *testing.T) {
	in := "HTTP/1.1 429 Too Many Requests\n" +
		"Retry-After: soon\n" +
		"this is not a header\n" +
		"X-RateLimit-Remaining: 0\n" +
		"Bad Name: x\n" +
		"X-RateLimit-Reset: 30\n" +
		"\n" +
		"body\n"
	m := headersJSON(t, in)
	if !jsonEq(m["status"], 429) || !jsonEq(m["remaining"], 0) || !jsonEq(m["reset_seconds"], 30) || m["retry_after_seconds"] != nil {
		t.Errorf("headers(malformed) = %v", m)
	}
	ig, _ := json.Marshal(m["ignored"])
	for _, want := range []string{`"header":"line 3"`, `"header":"line 5"`, `"header":"Retry-After"`} {
		if !strings.Contains(string(ig), want) {
			t.Errorf("headers(malformed) ignored = %s, want it to contain %s", ig, want)
		}
	}
	// Plain mode names the bad lines on stderr.
	_, stderr, err := runHeadersCmd(t, in, "--now", "2026-03-26T16:00:00Z")
	if err != nil || !strings.Contains(stderr, "line 3") || !strings.Contains(stderr, "line 5") {
		t.Errorf("headers(malformed) plain: err %v, stderr %q", err, stderr)
	}

	// Headers only, CRLF, a continuation line, curl -L with two heads.
	m = headersJSON(t, "X-RateLimit-Limit: 10\r\nX-RateLimit-Window:\r\n 60\r\n")
	if m["status"] != nil || m["verdict"] != nil || !jsonEq(m["limit"], 10) || !jsonEq(m["window_seconds"], 60) {
		t.Errorf("headers(headers only) = %v", m)
	}
	m = headersJSON(t, "HTTP/1.1 301 Moved Permanently\r\nLocation: /x\r\n\r\nHTTP/2 429\r\nretry-after: 7\r\n\r\n")
	if !jsonEq(m["status"], 429) || !jsonEq(m["retry_after_seconds"], 7) {
		t.Errorf("headers(two heads) = %v", m)
	}
	m = headersJSON(t, "HTTP/1.1 100 Continue\n\nHTTP/1.1 503 Service Unavailable\nRetry-After: 120\n")
	if !jsonEq(m["status"], 503) || !jsonEq(m["verdict"], "busy") {
		t.Errorf("headers(100 Continue) = %v", m)
	}
	m = headersJSON(t, "HTTP/1.1 abc\nRetry-After: 5\n")
	if m["status"] != nil || !jsonEq(m["retry_after_seconds"], 5) {
		t.Errorf("headers(bad status line) = %v", m)
	}

	// Nothing readable: non-zero exit.
	for _, in := range []string{"", "\n\n", "garbage\nmore garbage\n"} {
		_, _, err := runHeadersCmd(t, in, "--json")
		var ee *exitError
		if !errors.As(err, &ee) || ee.code == 0 {
			t.Errorf("headers(%q) error = %v, want an exit error", in, err)
		}
	}
	// Bad flags.
	for _, args := range [][]string{{"--now", "yesterday"}, {"--profile", "epoch"}, {"--rule", "403=slow"}, {"--rule", "x=ok"}} {
		if _, _, err := runHeadersCmd(t, "Retry-After: 1\n", args...); err == nil {
			t.Errorf("headers %v: no error", args)
		}
	}
	if _, _, err := runHeadersCmd(t, "", filepath.Join(t.TempDir(), "missing.txt")); err == nil {
		t.Errorf("headers missing-file: no error")
	}
}

func TestHeadersFlags(t *testing.T) {
	in := "HTTP/1.1 403 Forbidden\nX-RateLimit-Reset: 600000\nRetry-After: 172800\n"
	m := headersJSON(t, in, "--profile", "delta-millis", "--rule", "403=throttled")
	if !jsonEq(m["verdict"], "throttled") || !jsonEq(m["reset_seconds"], 600) || !jsonEq(m["retry_after_excessive"], true) {
		t.Errorf("headers --profile delta-millis --rule 403=throttled = %v", m)
	}
	m = headersJSON(t, in, "--max-retry-after", "0")
	if !jsonEq(m["retry_after_excessive"], false) || !jsonEq(m["reset_seconds"], 600000) {
		t.Errorf("headers --max-retry-after 0 = %v", m)
	}
	// A bad flag or a missing file is a usage error (exit 2), as in every
	// other command (they exited 1; 999=throttled and -1s were taken).
	for _, args := range [][]string{{"--now", "garbage"}, {"--profile", "bogus"}, {"--rule", "403=bogus"}, {"--rule", "999=throttled"},
		{"--max-retry-after", "-1s"}, {"/no/such/file"}} {
		if _, _, err := runHeadersCmd(t, in, args...); exitCode(err) != exitUsage {
			t.Errorf("headers %v: %v (exit %d), want exit 2", args, err, exitCode(err))
		}
	}
	out, _, err := runHeadersCmd(t, "", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--json", "--now", "--profile", "default auto]", "--max-retry-after", "default 24h]", "--rule", "default none]", "default the head's Date, else the current time]"} {
		if !strings.Contains(out, want) {
			t.Errorf("headers --help lacks %q:\n%s", want, out)
		}
	}
}

func TestHeadersStdinDash(t *testing.T) {
	b, err := os.ReadFile("../../examples/heads/429-shopify.txt")
	if err != nil {
		t.Fatal(err)
	}
	m := headersJSON(t, string(b), "-")
	if !jsonEq(m["retry_after_seconds"], 2) {
		t.Errorf("headers - < 429-shopify.txt = %v", m)
	}
}

// TestHeadersLongInputSaid: a head longer than what headers reads is said
// to be cut on stderr: a Retry-After past 4 MiB was dropped without a word,
// the report reading "no wait asked for".
func TestHeadersLongInputSaid(t *testing.T) {
	in := "HTTP/1.1 429 Too Many Requests\r\nX-Pad: " + strings.Repeat("x", headMaxBytes) + "\r\nRetry-After: 5\r\n\r\n"
	_, stderr, err := runHeadersCmd(t, in, "-")
	if err != nil || !strings.Contains(stderr, "is longer than 4 MiB: only its first 4 MiB are read") {
		t.Errorf("headers on %d bytes: %v, stderr %q; want it said that the input was cut", len(in), err, stderr)
	}
	_, stderr, _ = runHeadersCmd(t, "HTTP/1.1 429 x\r\nRetry-After: 5\r\n\r\n", "-")
	if strings.Contains(stderr, "longer than") {
		t.Errorf("a short head said to be cut: %q", stderr)
	}
}

func FuzzParseHead(f *testing.F) {
	for _, name := range []string{"429-github.txt", "429-discord.txt", "200-ietf.txt", "429-shopify.txt", "200-plain.txt", "503-challenge.txt"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "heads", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("HTTP/1.1 301 Moved\r\nLocation: /x\r\n\r\nHTTP/2 429\r\nretry-after: 7\r\n\r\n"))
	f.Add([]byte("X-RateLimit-Limit: 10\r\n continued\r\n\tagain\r\nBad Name: x\n:\n \n"))
	f.Add([]byte("HTTP/1.1 100 Continue\n\nHTTP/1.1 503 x\nRetry-After: 120, 120\nRateLimit: limit=1\n"))
	now := time.Date(2026, 3, 26, 16, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		hd := rawhead.Parse(data)
		rep := explainHead(hd, now, rlheader.Profile{}, classify.Rules{})
		if _, err := json.Marshal(rep); err != nil {
			t.Fatalf("report does not marshal: %v", err)
		}
		var b bytes.Buffer
		if err := writeHeadersText(&b, rep, now); err != nil {
			t.Fatal(err)
		}
		for _, p := range hd.Problems {
			if !strings.HasPrefix(p.Header, "line ") || p.Reason == "" {
				t.Fatalf("problem %+v does not name its line", p)
			}
		}
	})
}

// TestHeadersReadAsOfItsDate: a saved head is read as of its Date, the
// README's example included: its 30-minute reset, not "wait 0s" against
// today's clock.
func TestHeadersReadAsOfItsDate(t *testing.T) {
	out, msg, code := run(t, "headers", "../../examples/heads/429-github.txt")
	if code != 0 || !strings.Contains(out, "wait 30m0s before the next request") {
		t.Errorf("headers of the saved GitHub 429: exit %d %s\n%s\nwant its 30-minute wait", code, msg, out)
	}
}
