package netpolicy

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// certPool is the system's roots plus the certificates the environment
// names: the PEM file SSL_CERT_FILE and every file in the directories of
// SSL_CERT_DIR (colon-separated), the variables OpenSSL and Go read. Go
// itself reads them from the process's environment only, and on Linux a
// set SSL_CERT_FILE replaces the system bundle instead of adding to it;
// mcpgate adds, so a file holding only a company's CA still leaves public
// servers trusted, on every system. Nil means neither is set: the
// system's roots as they are.
//
// A SSL_CERT_FILE that cannot be read or holds no certificate is an
// error, since every TLS connection it was meant for would otherwise fail
// with an unknown authority; a missing SSL_CERT_DIR directory is skipped,
// as Go and OpenSSL skip it.
func certPool(getenv func(string) string) (*x509.CertPool, error) {
	file, dirs := getenv("SSL_CERT_FILE"), getenv("SSL_CERT_DIR")
	if file == "" && dirs == "" {
		return nil, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if file != "" {
		pem, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading the CA certificates of SSL_CERT_FILE: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("SSL_CERT_FILE %s holds no PEM certificate", file)
		}
	}
	for _, dir := range strings.Split(dirs, ":") {
		if dir == "" {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			if pem, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				pool.AppendCertsFromPEM(pem)
			}
		}
	}
	return pool, nil
}
