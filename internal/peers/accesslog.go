package peers

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// AccessEntry is one request as a target logged it.
type AccessEntry struct {
	Time       time.Time // when the server logged it, to the millisecond
	RemoteAddr string    // the client address the server saw: the exit
	Status     int       // the response status
	Limit      string    // nginx: $limit_req_status (PASSED, REJECTED, ...) or "-"; others ""
	Request    string    // nginx: the request line, e.g. "GET /ip HTTP/1.1"; others ""
}

// ParseAccessLine parses one access-log line of any target:
// "<unix seconds>[.<fraction>] <addr> <status>", optionally followed (nginx)
// by `limit=<$limit_req_status> "<request>"`.
func ParseAccessLine(line string) (AccessEntry, error) {
	bad := func(why string) (AccessEntry, error) {
		return AccessEntry{}, fmt.Errorf("access log line %q: %s", line, why)
	}
	ts, rest, ok1 := strings.Cut(line, " ")
	addr, rest, ok2 := strings.Cut(rest, " ")
	status, rest, _ := strings.Cut(rest, " ")
	if !ok1 || !ok2 || status == "" {
		return bad("want `time addr status ...`")
	}
	at, err := parseUnix(ts)
	if err != nil {
		return bad("time: " + err.Error())
	}
	if net.ParseIP(addr) == nil {
		return bad("bad address")
	}
	code, err := strconv.Atoi(status)
	if err != nil || code < 100 || code > 999 {
		return bad("bad status")
	}
	e := AccessEntry{Time: at, RemoteAddr: addr, Status: code}
	if rest == "" {
		return e, nil
	}
	limit, req, ok := strings.Cut(rest, " ")
	if !ok || !strings.HasPrefix(limit, "limit=") {
		return bad("want `limit=X \"request\"` after the status")
	}
	e.Limit = strings.TrimPrefix(limit, "limit=")
	if e.Request, err = strconv.Unquote(req); err != nil {
		e.Request = strings.Trim(req, `"`) // nginx escapes as \xHH, which Go may not accept
	}
	return e, nil
}

// parseUnix parses "1796092103.281" (any number of fraction digits up to 9).
func parseUnix(s string) (time.Time, error) {
	secStr, frac, hasFrac := strings.Cut(s, ".")
	sec, err := strconv.ParseInt(secStr, 10, 64)
	if err != nil || sec < 0 {
		return time.Time{}, errors.New("want unix seconds")
	}
	var ns int64
	if hasFrac {
		if frac == "" || len(frac) > 9 {
			return time.Time{}, errors.New("want 1 to 9 fraction digits")
		}
		n, err := strconv.ParseUint(frac, 10, 32)
		if err != nil {
			return time.Time{}, errors.New("bad fraction")
		}
		ns = int64(n)
		for range 9 - len(frac) {
			ns *= 10
		}
	}
	return time.Unix(sec, ns), nil
}

// ReadAccessLog parses the complete lines of an access log; a last line
// still being written (no newline yet) is left out.
func ReadAccessLog(path string) ([]AccessEntry, error) {
	return (&AccessTail{Path: path}).Read()
}

// AccessTail reads an access log incrementally: each Read returns the
// complete lines appended since the previous one. The zero value with Path
// set is ready. It is not safe for concurrent use.
type AccessTail struct {
	Path   string
	offset int64
}

// Read returns the entries of the lines completed since the last Read. A
// log that does not exist yet reads as empty.
func (t *AccessTail) Read() ([]AccessEntry, error) {
	f, err := os.Open(t.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return nil, nil
	}
	var out []AccessEntry
	for line := range strings.Lines(string(data[:end+1])) {
		e, err := ParseAccessLine(strings.TrimSuffix(line, "\n"))
		if err != nil {
			return out, fmt.Errorf("%s: %w", t.Path, err)
		}
		out = append(out, e)
	}
	t.offset += int64(end + 1)
	return out, nil
}
