package backoff

import (
	"fmt"
	"time"
)

// SayRetryAfter words a server's Retry-After ra for a reason or a change
// record, given the longest wait the caller honours: as it is up to that,
// and beyond it in days (or "over a century") with what is honoured,
// rather than a parser's saturated 2562047h47m16s.
func SayRetryAfter(ra, honoured time.Duration) string {
	if ra <= honoured {
		// (A wait taken from a date or a reset reads 57.889987707s.)
		return fmt.Sprintf("Retry-After %v", ra.Round(time.Millisecond))
	}
	told := "over a century"
	if ra < 100*365*24*time.Hour {
		told = fmt.Sprintf("%.0f days", ra.Hours()/24)
	}
	return fmt.Sprintf("Retry-After %s, honoured as %v", told, honoured)
}
