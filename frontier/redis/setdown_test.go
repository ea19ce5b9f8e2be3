package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/exitgate/exitgate/internal/syncbuf"
)

// TestSetDownCancelledIsNoOutage: a Redis call given up by its caller (the
// run stopping) sends what it carried to the journal, as an outage does,
// but is not warned of as Redis unreachable: a worker ending its
// --duration said so, Redis up.
func TestSetDownCancelledIsNoOutage(t *testing.T) {
	for _, c := range []struct {
		err  error
		warn bool
	}{
		{fmt.Errorf("settle: %w", context.Canceled), false},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), true},
	} {
		var buf syncbuf.Buffer
		s := &Store{log: slog.New(slog.NewTextHandler(&buf, nil))}
		s.setDown(c.err)
		if !s.isDown() {
			t.Errorf("setDown(%v): not down, want what the call carried journaled", c.err)
		}
		if warned := strings.Contains(buf.String(), "Redis unreachable"); warned != c.warn {
			t.Errorf("setDown(%v) logged %q; want a warning of an outage: %v", c.err, buf.String(), c.warn)
		}
	}
}
