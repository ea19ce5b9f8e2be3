package rawhead

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		status     int
		header     map[string]string // name as spelled -> joined values
		body       string
		problemsAt []string // "line N" of each problem
	}{
		{"status and headers, CRLF", "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nX-RateLimit-Limit: 10\r\n\r\n", 429,
			map[string]string{"Retry-After": "7", "X-RateLimit-Limit": "10"}, "", nil},
		{"headers only, LF", "retry-after: 3\nRetry-After: 4\n", 0, map[string]string{"retry-after": "3,4"}, "", nil},
		{"continuation lines", "HTTP/2 200\nRateLimit-Policy: \"a\";q=1,\n  \"b\";q=2\n", 200,
			map[string]string{"RateLimit-Policy": `"a";q=1, "b";q=2`}, "", nil},
		{"bad lines named", "HTTP/1.1 200 OK\nno colon here\nBad Name: x\n oops\nGood: y\n", 200,
			map[string]string{"Good": "y"}, "", []string{"line 2", "line 3", "line 4"}},
		{"last of several heads wins", "HTTP/1.1 100 Continue\n\nHTTP/1.1 301 Moved\nLocation: /x\n\nHTTP/2 429\nretry-after: 9\n\nbody text", 429,
			map[string]string{"retry-after": "9"}, "body text", nil},
		{"malformed status line", "HTTP/1.1 abc\nA: b\n", 0, map[string]string{"A": "b"}, "", []string{"line 1"}},
		{"empty", "", 0, map[string]string{}, "", nil},
	}
	for _, tt := range tests {
		hd := Parse([]byte(tt.in))
		if hd.Status != tt.status {
			t.Errorf("%s: Parse(%q).Status = %d, want %d", tt.name, tt.in, hd.Status, tt.status)
		}
		if len(hd.Header) != len(tt.header) {
			t.Errorf("%s: Parse(%q).Header = %v, want %v", tt.name, tt.in, hd.Header, tt.header)
		}
		for k, want := range tt.header {
			if got := strings.Join(hd.Header[k], ","); got != want {
				t.Errorf("%s: Header[%q] = %q, want %q", tt.name, k, got, want)
			}
		}
		if string(hd.Body) != tt.body {
			t.Errorf("%s: Body = %q, want %q", tt.name, hd.Body, tt.body)
		}
		var at []string
		for _, p := range hd.Problems {
			at = append(at, p.Header)
		}
		if strings.Join(at, ";") != strings.Join(tt.problemsAt, ";") {
			t.Errorf("%s: problems at %v, want %v (%+v)", tt.name, at, tt.problemsAt, hd.Problems)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"429-github.txt", "200-ietf.txt", "503-challenge.txt"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "heads", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("HTTP/1.1 301 Moved\r\nLocation: /x\r\n\r\nHTTP/2 429\r\nretry-after: 7\r\n\r\n"))
	f.Add([]byte("X: 1\r\n continued\r\n\tagain\r\nBad Name: x\n:\n \n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		hd := Parse(data)
		for _, p := range hd.Problems {
			if !strings.HasPrefix(p.Header, "line ") || p.Reason == "" {
				t.Fatalf("problem %+v does not name its line", p)
			}
		}
		if hd.Status != 0 && (hd.Status < 100 || hd.Status > 999) {
			t.Fatalf("status %d out of range", hd.Status)
		}
	})
}
