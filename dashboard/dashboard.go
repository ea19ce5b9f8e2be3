// Package dashboard serves exitgate's live dashboard: one embedded page
// that works offline (the chart library, uPlot, is vendored with its
// licence), its state as JSON (/api/state) and live updates as server-sent
// events (/api/events). It shows a crawl's hosts (rate, learned capacity,
// 429 ratio over time, alerts, breaker state), exits with their reputation,
// what is parked and abandoned and why, the learner's recent change records
// and the monitor's events, all from a monitor.Status. WriteTables prints
// the same tables for a terminal (exitgate status).
package dashboard

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"time"

	"github.com/exitgate/exitgate/monitor"
)

//go:embed static
var static embed.FS

// Source is what the dashboard shows: a *monitor.Monitor.
type Source interface {
	Status(history bool) monitor.Status
}

// Options tunes the handler. The zero value means the defaults.
type Options struct {
	// Every is how often a live update is sent. Default 1 second.
	Every time.Duration
	// Heartbeat is how often a comment line keeps an idle stream open
	// through proxies. Default 15 seconds.
	Heartbeat time.Duration
}

// Handler serves the dashboard of src: the page at /, its files under
// /static/, the Status with each host's history at /api/state, and a
// Status without history every Options.Every as server-sent events at
// /api/events. It is safe for concurrent use; each event stream ends when
// its client goes away or the server shuts down.
func Handler(src Source, opts Options) http.Handler {
	if opts.Every <= 0 {
		opts.Every = time.Second
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 15 * time.Second
	}
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(sub)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		http.ServeFileFS(w, r, sub, "index.html")
	})
	mux.HandleFunc("GET /api/state", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(src.Status(r.URL.Query().Get("history") != "0"))
	})
	mux.HandleFunc("GET /api/events", func(w http.ResponseWriter, r *http.Request) {
		stream(w, r, src, opts)
	})
	return mux
}

// stream sends src's Status every opts.Every until the client goes away.
// An http.Server's WriteTimeout would cut the stream: the write deadline
// is cleared for it.
func stream(w http.ResponseWriter, r *http.Request, src Source, opts Options) {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // not every ResponseWriter supports it; then none was set
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func() error {
		b, err := json.Marshal(src.Status(false))
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "event: status\ndata: %s\n\n", b); err != nil {
			return err
		}
		return rc.Flush()
	}
	if _, err := fmt.Fprintf(w, "retry: 2000\n\n"); err != nil {
		return
	}
	if send() != nil {
		return
	}
	tick := time.NewTicker(opts.Every)
	defer tick.Stop()
	beat := time.NewTicker(opts.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if send() != nil {
				return
			}
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}
