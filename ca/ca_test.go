package ca

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestInitMakesOnceAndKeepsKeyPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	c, created, err := Init(dir)
	if err != nil || !created {
		t.Fatalf("Init(new dir) = created %v, %v; want a new CA", created, err)
	}
	for name, want := range map[string]os.FileMode{KeyFile: 0o600, CertFile: 0o644} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s mode = %04o, want %04o", name, got, want)
		}
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("CA dir mode = %04o, want no access for group or others", fi.Mode().Perm())
	}
	if bytes.Contains(c.PEM(), []byte("PRIVATE")) {
		t.Error("PEM() holds a private key")
	}
	cert := c.Certificate()
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 || !cert.BasicConstraintsValid || len(cert.SubjectKeyId) == 0 {
		t.Errorf("root: IsCA %v, usage %v, constraints %v, SKI %x; want a CA that strict verifiers accept",
			cert.IsCA, cert.KeyUsage, cert.BasicConstraintsValid, cert.SubjectKeyId)
	}

	again, created, err := Init(dir)
	if err != nil || created {
		t.Fatalf("Init(existing) = created %v, %v; want the same CA loaded", created, err)
	}
	if !bytes.Equal(again.DER(), c.DER()) {
		t.Error("Init made a second CA over the first")
	}
}

func TestLoadRefusesExposedKey(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, KeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); !errors.Is(err, ErrKeyExposed) {
		t.Fatalf("Load(key 0644) = %v, want ErrKeyExposed", err)
	}
	if _, err := Load(t.TempDir()); !errors.Is(err, ErrNoCA) {
		t.Fatalf("Load(empty dir) = %v, want ErrNoCA", err)
	}
}

func TestConcurrentInitAgrees(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	var wg sync.WaitGroup
	ders := make([][]byte, 4)
	for i := range ders {
		wg.Go(func() {
			c, _, err := Init(dir)
			if err != nil {
				t.Error(err)
				return
			}
			ders[i] = c.DER()
		})
	}
	wg.Wait()
	for i := 1; i < len(ders); i++ {
		if !bytes.Equal(ders[i], ders[0]) {
			t.Fatalf("Init %d loaded another CA than Init 0", i)
		}
	}
}

func TestLeafVerifiesAgainstRoot(t *testing.T) {
	c, _, err := Init(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(c.Certificate())
	for _, host := range []string{"example.com", "127.0.0.1", "::1", "Mixed.Example.ORG."} {
		leaf, err := c.Leaf(host)
		if err != nil {
			t.Fatalf("Leaf(%q): %v", host, err)
		}
		name := host
		if name == "Mixed.Example.ORG." {
			name = "mixed.example.org"
		}
		if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, CurrentTime: time.Now()}); err != nil {
			t.Errorf("Leaf(%q) does not verify: %v", host, err)
		}
		again, _ := c.Leaf(host)
		if again != leaf {
			t.Errorf("Leaf(%q) made twice, want it cached", host)
		}
	}
}

// A real TLS handshake against the CA's server config, as a client that
// trusts only the root sees it.
func TestTLSConfigServesSNIAndFallback(t *testing.T) {
	c, _, err := Init(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(c.Certificate())
	for _, tc := range []struct{ sni, fallback, verify string }{
		{"shop.example", "ignored.example:443", "shop.example"},
		{"", "10.1.2.3", "10.1.2.3"},
	} {
		a, b := net.Pipe()
		done := make(chan error, 1)
		go func() {
			srv := tls.Server(a, c.TLSConfig(tc.fallback))
			done <- srv.Handshake()
			a.Close() // not srv.Close: its close_notify would wait on the unbuffered pipe
		}()
		cl := tls.Client(b, &tls.Config{RootCAs: roots, ServerName: tc.sni, InsecureSkipVerify: tc.sni == "",
			VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
				leaf, err := x509.ParseCertificate(raw[0])
				if err != nil {
					return err
				}
				inter := x509.NewCertPool()
				_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: tc.verify})
				return err
			}})
		if err := cl.Handshake(); err != nil {
			t.Errorf("handshake (sni %q, fallback %q): %v", tc.sni, tc.fallback, err)
		}
		b.Close()
		if err := <-done; err != nil {
			t.Errorf("server handshake (sni %q): %v", tc.sni, err)
		}
	}
}
