package limit

import "time"

// A bare 403 (verdict.Forbidden) is one URL's fate, not a ban: a forbidden
// page among good ones says nothing about the lane. A wave says more:
// Config.BanWave Forbidden answers from distinct URLs on one lane within
// waveSpan, with no success on the lane in between, quarantine the lane as a
// Banned verdict does.
const (
	waveURLs = 3 // Config.BanWave's default
	waveSpan = int64(time.Minute)
)

// wave is a lane's recent Forbidden answers since its last success, one per
// URL. The host keeps one only for lanes that have some (host.waves).
type wave []waveHit

type waveHit struct {
	url uint64 // Outcome.URLHash; 0 (unknown) is always a URL of its own
	at  int64
}

// forbiddenWave adds a Forbidden answer for the URL hashed url at now to w
// and reports whether w is now a wave: n answers from distinct URLs within
// span. Answers older than span are dropped; the same URL again counts once,
// at its latest time. The caller drops w on a success and once it is a wave.
func forbiddenWave(w *wave, url uint64, now, span int64, n int) bool {
	kept := (*w)[:0]
	for _, h := range *w {
		if now-h.at <= span && (url == 0 || h.url != url) {
			kept = append(kept, h)
		}
	}
	*w = append(kept, waveHit{url: url, at: now})
	return len(*w) >= n
}

// forbidden records a Forbidden answer on lane l and reports whether it
// completed a wave.
func (h *host) forbidden(r *rules, l *lane, url uint64, now int64) bool {
	if h.waves == nil {
		h.waves = make(map[*lane]*wave)
	}
	w := h.waves[l]
	if w == nil {
		w = new(wave)
		h.waves[l] = w
	}
	if !forbiddenWave(w, url, now, waveSpan, r.banWave) {
		return false
	}
	delete(h.waves, l)
	return true
}

// endWave forgets lane l's Forbidden answers (it succeeded, or is gone).
func (h *host) endWave(l *lane) {
	if h.waves != nil {
		delete(h.waves, l)
	}
}
