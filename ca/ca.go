// Package ca is the local certificate authority with which the gateway
// intercepts HTTPS: a root made here on first use, with crypto/x509 and
// crypto/ecdsa, kept in a directory of the user's (the certificate readable,
// the key 0600 in a 0700 directory), and leaf certificates for each host the
// gateway is asked to reach, signed by it and cached in memory.
//
// No library's built-in CA is ever used: a CA whose private key ships in a
// public repository lets anyone who has read it intercept the traffic of
// everyone who trusts it. Each exitgate installation makes its own key, and
// the key never leaves the machine (Export writes the certificate only).
package ca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// File names inside the CA directory.
const (
	CertFile = "ca.pem"     // the root certificate, PEM; give it to clients to trust
	KeyFile  = "ca-key.pem" // the root's private key, PEM (PKCS #8), mode 0600
)

// Validity of what the CA makes. Leaves are made again on each start of the
// gateway (they live in memory only), so a short life costs nothing and
// stays under the 398 days browsers accept.
const (
	RootValidity = 10 * 365 * 24 * time.Hour
	LeafValidity = 30 * 24 * time.Hour
)

// DefaultCacheSize bounds how many leaf certificates a CA keeps in memory.
const DefaultCacheSize = 4096

// ErrKeyExposed reports a key file that others than its owner may read: it
// is refused rather than used, since anyone who can read it can intercept
// the traffic of whoever trusts the CA.
var ErrKeyExposed = errors.New("ca: private key readable by group or others")

// ErrNoCA reports a directory that holds no CA (Load, not Init).
var ErrNoCA = errors.New("ca: no CA in the directory (run exitgate ca init)")

// CA is a loaded root: its certificate and key, and a cache of the leaf
// certificates it signed. It is safe for concurrent use.
type CA struct {
	dir  string
	cert *x509.Certificate
	der  []byte
	key  crypto.Signer

	// leafKey is shared by every leaf this process makes: signing a
	// certificate is cheap, making an ECDSA key per host is not needed
	// (the key is never written anywhere).
	leafKey *ecdsa.PrivateKey

	mu    sync.Mutex
	cache map[string]*leafEntry
	order []string // insertion order, for eviction
	max   int
}

type leafEntry struct {
	once sync.Once
	cert *tls.Certificate
	err  error
}

// DefaultDir is where the CA lives when no directory is given:
// $XDG_CONFIG_HOME/exitgate/ca, else ~/.config/exitgate/ca (os.UserConfigDir).
func DefaultDir() (string, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("ca: no configuration directory: %w", err)
	}
	return filepath.Join(base, "exitgate", "ca"), nil
}

// Init loads the CA in dir, or makes one there when the directory holds
// none. created says a new one was made. Two processes that race to make
// one end up with the same CA: the key file is created exclusively, and the
// loser loads the winner's.
func Init(dir string) (c *CA, created bool, err error) {
	c, err = Load(dir)
	switch {
	case err == nil:
		return c, false, nil
	case errors.Is(err, errNoCert):
		return waitLoad(dir)
	case !errors.Is(err, ErrNoCA):
		return nil, false, err
	}
	if err := create(dir, time.Now()); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return waitLoad(dir)
		}
		return nil, false, err
	}
	c, err = Load(dir)
	return c, err == nil, err
}

// waitLoad loads a CA whose key another process has just made while it
// writes the certificate: it waits for the certificate, briefly.
func waitLoad(dir string) (*CA, bool, error) {
	for range 100 {
		if _, err := os.Stat(filepath.Join(dir, CertFile)); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	c, err := Load(dir)
	return c, false, err
}

// errNoCert: the key is there, the certificate is not (yet).
var errNoCert = errors.New("ca: key without certificate")

// Load loads the CA in dir. A missing CA is ErrNoCA; a key file readable by
// group or others is ErrKeyExposed.
func Load(dir string) (*CA, error) {
	keyPath := filepath.Join(dir, KeyFile)
	fi, err := os.Stat(keyPath)
	if errors.Is(err, fs.ErrNotExist) {
		if _, cerr := os.Stat(filepath.Join(dir, CertFile)); cerr == nil {
			return nil, fmt.Errorf("ca: %s has %s but no %s: remove the certificate to make a new CA", dir, CertFile, KeyFile)
		}
		return nil, fmt.Errorf("%w: %s", ErrNoCA, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("ca: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o; chmod 600 it", ErrKeyExposed, keyPath, fi.Mode().Perm())
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("ca: %w", err)
	}
	certPEM, err := os.ReadFile(filepath.Join(dir, CertFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has %s but no %s (remove the key to make a new CA)", errNoCert, dir, KeyFile, CertFile)
	}
	if err != nil {
		return nil, fmt.Errorf("ca: %w", err)
	}
	cert, der, err := parseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("ca: %s: %w", filepath.Join(dir, CertFile), err)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("ca: %s: %w", keyPath, err)
	}
	if !samePublic(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("ca: %s and %s do not belong together", CertFile, KeyFile)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("ca: %s is not a CA certificate", CertFile)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("ca: %w", err)
	}
	return &CA{dir: dir, cert: cert, der: der, key: key, leafKey: leafKey,
		cache: map[string]*leafEntry{}, max: DefaultCacheSize}, nil
}

// create makes a new root in dir: the key first, exclusively, then the
// certificate.
func create(dir string, now time.Time) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("ca: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("ca: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	name := "exitgate local CA"
	if host != "" {
		name += " " + host
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name + " " + now.UTC().Format("2006-01-02"), Organization: []string{"exitgate (this machine only)"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(RootValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return fmt.Errorf("ca: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("ca: %w", err)
	}
	keyPath := filepath.Join(dir, KeyFile)
	f, err := os.OpenFile(keyPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		return fmt.Errorf("ca: %w", err)
	}
	werr := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = writeAtomic(filepath.Join(dir, CertFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	}
	if werr != nil {
		os.Remove(keyPath)
		return fmt.Errorf("ca: %w", werr)
	}
	return nil
}

func writeAtomic(path string, data []byte, perm fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("ca: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil // never zero
}

func parseCert(data []byte) (*x509.Certificate, []byte, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, nil, errors.New("no PEM CERTIFICATE block")
		}
		if b.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(b.Bytes)
			return c, b.Bytes, err
		}
	}
}

func parseKey(data []byte) (crypto.Signer, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, errors.New("no PEM private key block")
		}
		var k any
		var err error
		switch b.Type {
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(b.Bytes)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(b.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		s, ok := k.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("unsupported key type %T", k)
		}
		return s, nil
	}
}

func samePublic(a, b crypto.PublicKey) bool {
	ea, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ea.Equal(b)
}

// Dir returns the directory the CA lives in.
func (c *CA) Dir() string { return c.dir }

// CertPath returns the path of the root certificate: what clients trust.
func (c *CA) CertPath() string { return filepath.Join(c.dir, CertFile) }

// Certificate returns the root certificate.
func (c *CA) Certificate() *x509.Certificate { return c.cert }

// PEM returns the root certificate in PEM. It never includes the key.
func (c *CA) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.der})
}

// DER returns the root certificate in DER.
func (c *CA) DER() []byte { return append([]byte(nil), c.der...) }

// Leaf returns a certificate for host (a DNS name or an IP address, without
// port), signed by the CA, made on first use and cached (up to
// DefaultCacheSize hosts; the oldest are forgotten first).
func (c *CA) Leaf(host string) (*tls.Certificate, error) {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" {
		return nil, errors.New("ca: empty host name")
	}
	c.mu.Lock()
	e := c.cache[host]
	if e == nil {
		e = &leafEntry{}
		c.cache[host] = e
		c.order = append(c.order, host)
		for len(c.order) > c.max {
			delete(c.cache, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.mu.Unlock()
	e.once.Do(func() { e.cert, e.err = c.sign(host, time.Now()) })
	return e.cert, e.err
}

func (c *CA) sign(host string, now time.Time) (*tls.Certificate, error) {
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: host},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(LeafValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	if tmpl.NotAfter.After(c.cert.NotAfter) {
		tmpl.NotAfter = c.cert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, c.leafKey.Public(), c.key)
	if err != nil {
		return nil, fmt.Errorf("ca: certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der, c.der}, PrivateKey: c.leafKey, Leaf: leaf}, nil
}

// TLSConfig returns a server configuration that presents, for each
// connection, a leaf for the name the client asked for (SNI), or for
// fallback (the CONNECT target, its port ignored) when the client sent
// none. It offers
// HTTP/1.1 only.
func (c *CA) TLSConfig(fallback string) *tls.Config {
	if h, _, err := net.SplitHostPort(fallback); err == nil {
		fallback = h
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			name := hello.ServerName
			if name == "" {
				name = fallback
			}
			return c.Leaf(name)
		},
	}
}
