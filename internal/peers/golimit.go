package peers

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/httprate"
	"golang.org/x/time/rate"
)

// GoServerConfig configures an in-process target: a rate-limiting
// middleware around a handler that answers every path with 200 "ok".
type GoServerConfig struct {
	// Name names the server in errors, e.g. "httprate 30/10s". Required.
	Name string
	// Limiter is the middleware under test. Required.
	Limiter func(http.Handler) http.Handler
	// Listen is the address to listen on. Empty means 127.0.0.1 on a free
	// port.
	Listen string
	// Dir holds the access log. Empty: a temporary directory that Close
	// removes.
	Dir string
}

// GoServer is a running in-process target. Each request is logged, after
// the middleware answered, as "<unix time with ms> <client address>
// <status>". It is safe for concurrent use.
type GoServer struct {
	name      string
	srv       *http.Server
	addr      string
	dir       workDir
	accessLog string

	mu     sync.Mutex
	log    *os.File
	logErr error // the first failed log write
	served chan struct{}
	once   sync.Once
	err    error
}

// StartGoServer serves cfg on a loopback listener until Close.
func StartGoServer(cfg GoServerConfig) (*GoServer, error) {
	if cfg.Name == "" || cfg.Limiter == nil {
		return nil, errors.New("go server: Name and Limiter are required")
	}
	listen := cfg.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	dir, err := newWorkDir(cfg.Dir, "goserver")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Name, err)
	}
	s := &GoServer{name: cfg.Name, dir: dir, accessLog: dir.join("access.log"), served: make(chan struct{})}
	if s.log, err = os.OpenFile(s.accessLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		dir.remove()
		return nil, fmt.Errorf("%s: %w", cfg.Name, err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		s.log.Close()
		dir.remove()
		return nil, fmt.Errorf("%s: %w", cfg.Name, err)
	}
	s.addr = ln.Addr().String()
	s.srv = &http.Server{Handler: s.logged(cfg.Limiter(http.HandlerFunc(ok))), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

func ok(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("ok\n"))
}

// logged writes one access-log line per request once h has answered.
func (s *GoServer) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		ip := clientIP(r)
		now := time.Now()
		line := fmt.Sprintf("%d.%03d %s %d\n", now.Unix(), now.Nanosecond()/1e6, ip, sw.status)
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, err := s.log.WriteString(line); err != nil && s.logErr == nil {
			s.logErr = err
		}
	})
}

// statusWriter records the status a handler sent.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Addr returns the host:port the server listens on.
func (s *GoServer) Addr() string { return s.addr }

// URL returns the base URL, without a trailing slash.
func (s *GoServer) URL() string { return "http://" + s.addr }

// AccessLogPath returns the access log's path.
func (s *GoServer) AccessLogPath() string { return s.accessLog }

// AccessLog returns the access log so far, or the first error writing it.
func (s *GoServer) AccessLog() ([]AccessEntry, error) {
	s.mu.Lock()
	err := s.logErr
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%s: access log: %w", s.name, err)
	}
	return ReadAccessLog(s.accessLog)
}

// Tail returns the tail of the access log.
func (s *GoServer) Tail() string { return fileTail(s.accessLog, 4096) }

// Close stops the server and every connection, closes the access log and
// removes a temporary directory. It is safe to call more than once.
func (s *GoServer) Close() error {
	s.once.Do(func() {
		s.err = s.srv.Close()
		<-s.served
		s.mu.Lock()
		if err := s.log.Close(); s.err == nil {
			s.err = err
		}
		s.mu.Unlock()
		s.dir.remove()
	})
	return s.err
}

// XRate is a per-client-IP token bucket built from golang.org/x/time/rate:
// each address gets its own rate.Limiter of r with burst, and a request
// that finds the bucket empty is answered 429 with no header (x/time/rate
// has none to offer). Rejected requests take no token. The map of addresses
// is not bounded: it is for a bench with a handful of exits.
func XRate(r rate.Limit, burst int) func(http.Handler) http.Handler {
	var mu sync.Mutex
	buckets := map[string]*rate.Limiter{}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			ip := clientIP(req)
			mu.Lock()
			b := buckets[ip]
			if b == nil {
				b = rate.NewLimiter(r, burst)
				buckets[ip] = b
			}
			mu.Unlock()
			if !b.Allow() {
				http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
				return
			}
			next.ServeHTTP(w, req)
		})
	}
}

// HTTPRate is github.com/go-chi/httprate's LimitByIP(limit, window): a
// sliding-window counter per client address (the previous window's count
// weighted by how much of it still overlaps, plus the current window's),
// answering X-RateLimit-Limit, -Remaining and -Reset on every response and
// Retry-After (the window length) with its 429s. With strip, those headers
// are deleted before the response is written, so only the bare 429 remains.
func HTTPRate(limit int, window time.Duration, strip bool) func(http.Handler) http.Handler {
	mw := httprate.LimitByIP(limit, window) //nolint:staticcheck // keyed on RemoteAddr on purpose: the exit is the TCP peer
	if !strip {
		return mw
	}
	return Strip(mw)
}

// Strip wraps a limiter middleware so that its answers carry no rate-limit
// header (X-RateLimit-*, Retry-After): the same limiter, bare.
func Strip(mw func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		inner := mw(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inner.ServeHTTP(&stripWriter{ResponseWriter: w}, r)
		})
	}
}

// stripWriter deletes rate-limit headers just before the head is written.
type stripWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *stripWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		h := w.Header()
		for k := range h {
			if strings.HasPrefix(k, "X-Ratelimit-") || k == "Retry-After" {
				h.Del(k)
			}
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *stripWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// clientIP is the request's client address without its port: what the
// limiters key on and the access log records.
func clientIP(r *http.Request) string {
	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return ip
}
