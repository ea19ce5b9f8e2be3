package peertest

import (
	"errors"
	"testing"

	"github.com/exitgate/exitgate/internal/peers"
)

// recorder notes how Check ended a test instead of ending this one.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Skip(...any)           { r.skipped = true }
func (r *recorder) Fatal(...any)          { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }

func TestCheck(t *testing.T) {
	missing := &peers.NotInstalledError{Bin: "haproxy", Package: "haproxy", Err: errors.New("not found")}
	for _, tt := range []struct {
		name, env     string
		err           error
		skip, failure bool
	}{
		{"nil", "", nil, false, false},
		{"missing skips", "", missing, true, false},
		{"missing fails when required", "1", missing, false, true},
		{"other errors fail", "", errors.New("nginx: bad config"), false, true},
		{"other errors fail when required", "1", errors.New("nginx: bad config"), false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(RequireEnv, tt.env)
			r := &recorder{TB: t}
			Check(r, tt.err)
			if r.skipped != tt.skip || r.failed != tt.failure {
				t.Errorf("Check(%v) with %s=%q: skipped %v failed %v, want %v %v", tt.err, RequireEnv, tt.env, r.skipped, r.failed, tt.skip, tt.failure)
			}
		})
	}
}
