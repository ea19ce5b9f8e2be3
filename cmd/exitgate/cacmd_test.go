package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCACommands: ca path and export refuse before init; init makes the CA
// once (key 0600); path prints the certificate's path; export prints the
// certificate (PEM or DER), never the key.
func TestCACommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	if r := runCmd(t, "ca", "path", "--ca-dir", dir); r.err == nil || !strings.Contains(r.err.Error(), "ca init") {
		t.Errorf("ca path before init: %v, want an error pointing at ca init", r.err)
	}
	r := runCmd(t, "ca", "init", "--ca-dir", dir)
	if r.err != nil || strings.TrimSpace(r.stdout) != filepath.Join(dir, "ca.pem") || !strings.Contains(r.stderr, "made a CA") {
		t.Fatalf("ca init: %q %q %v", r.stdout, r.stderr, r.err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "ca-key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v, want mode 0600", fi.Mode(), err)
	}
	first, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if r := runCmd(t, "ca", "init", "--ca-dir", dir); r.err != nil || !strings.Contains(r.stderr, "exists") {
		t.Errorf("ca init again: %q %v, want the CA kept", r.stderr, r.err)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "ca.pem")); !bytes.Equal(first, again) {
		t.Error("a second ca init replaced the CA")
	}
	if r := runCmd(t, "ca", "path", "--ca-dir", dir); strings.TrimSpace(r.stdout) != filepath.Join(dir, "ca.pem") {
		t.Errorf("ca path = %q", r.stdout)
	}
	r = runCmd(t, "ca", "export", "--ca-dir", dir)
	if r.err != nil || r.stdout != string(first) || strings.Contains(r.stdout, "PRIVATE") {
		t.Errorf("ca export: %v, output %q; want the certificate alone", r.err, r.stdout)
	}
	der := filepath.Join(t.TempDir(), "ca.der")
	if r := runCmd(t, "ca", "export", "--ca-dir", dir, "--der", "-o", der); r.err != nil {
		t.Fatal(r.err)
	}
	b, _ := os.ReadFile(der)
	blk, _ := pem.Decode(first)
	if c, err := x509.ParseCertificate(b); err != nil || !bytes.Equal(b, blk.Bytes) || !c.IsCA {
		t.Errorf("ca export --der: %v", err)
	}
	// A key others may read is refused, with the way out.
	os.Chmod(filepath.Join(dir, "ca-key.pem"), 0o644)
	if r := runCmd(t, "ca", "path", "--ca-dir", dir); r.err == nil || !strings.Contains(r.err.Error(), "chmod 600") {
		t.Errorf("ca path with an exposed key: %v, want a refusal saying chmod 600", r.err)
	}
}

// TestCAPathFollowsServe: serve's CA directory set in the environment
// (EXITGATE_SERVE_CA_DIR) is where the ca commands look too, so that
// `curl --cacert "$(exitgate ca path)"` names the CA serve uses; their own
// --ca-dir still wins.
func TestCAPathFollowsServe(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "serve-ca")
	t.Setenv(serveCADirEnv, dir)
	if r := runCmd(t, "ca", "init"); r.err != nil || strings.TrimSpace(r.stdout) != filepath.Join(dir, "ca.pem") {
		t.Fatalf("ca init with %s set: %q %v, want %s", serveCADirEnv, r.stdout, r.err, filepath.Join(dir, "ca.pem"))
	}
	if r := runCmd(t, "ca", "path"); strings.TrimSpace(r.stdout) != filepath.Join(dir, "ca.pem") {
		t.Errorf("ca path with %s set = %q, want serve's CA", serveCADirEnv, r.stdout)
	} else if strings.Contains(r.stderr, serveCADirEnv) {
		// It read the variable and said it did not ("is `exitgate
		// serve`'s setting, not read here").
		t.Errorf("ca path with %s set warns of it: %q", serveCADirEnv, r.stderr)
	}
	own := filepath.Join(t.TempDir(), "own")
	if r := runCmd(t, "ca", "init", "--ca-dir", own); r.err != nil || strings.TrimSpace(r.stdout) != filepath.Join(own, "ca.pem") {
		t.Errorf("ca init --ca-dir with %s set: %q %v, want the flag's", serveCADirEnv, r.stdout, r.err)
	}
}

// TestServeFlagsChecked: bad serve flags are usage errors (exit 2) before
// anything listens, and --auth's value is never repeated.
func TestServeFlagsChecked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "0.0.0.0:0"}, "--auth"},
		{[]string{"--listen", "[::]:0"}, "--auth"},
		{[]string{"--auth", "nocolon-Secret9"}, "USER:PASSWORD"},
		{[]string{"--auth", ":Secret9"}, "USER:PASSWORD"},
		{[]string{"--wait", "20m"}, "--wait-cap"},
		{[]string{"--timeout", "0s"}, "--timeout"},
		{[]string{"--timeout", "0s"}, "want above 0"},
		{[]string{"--wait", "-1s"}, "want 0 (none) or more"}, // it said "above 0", and 0 is allowed
		{[]string{"--lane-rate", "0"}, "--lane-rate"},
		{[]string{"--concurrency", "0"}, "--concurrency"},
	} {
		r := runCmd(t, append([]string{"serve", "--no-intercept", "--out", t.TempDir()}, tc.args...)...)
		if exitCode(r.err) != exitUsage || !strings.Contains(r.err.Error(), tc.want) {
			t.Errorf("serve %v: %v (exit %d), want a usage error naming %s", tc.args, r.err, exitCode(r.err), tc.want)
		}
		if r.err != nil && strings.Contains(r.err.Error(), "Secret9") {
			t.Errorf("serve %v: the error repeats the secret: %v", tc.args, r.err)
		}
	}
}
