package netpolicy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
func certPool(file, dirs string) (*x509.CertPool, error) {
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

// checkCertFile is what New checks of SSL_CERT_FILE at once: that it can
// be read and has a certificate block. Parsing the certificates (with the
// system's roots and SSL_CERT_DIR's, some 10 ms) waits for the first TLS
// handshake, so a process that answers from stored catalogs never pays
// for it.
//
// It reads only as far as the first certificate: a system bundle (200 KB
// and more) read whole would cost every process a few hundred page faults.
func checkCertFile(file string) error {
	if file == "" {
		return nil
	}
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("reading the CA certificates of SSL_CERT_FILE: %w", err)
	}
	defer f.Close()
	marker := []byte("-----BEGIN CERTIFICATE-----")
	buf := make([]byte, 16<<10)
	kept := 0 // the end of the last read, in case the marker spans two
	for {
		n, err := f.Read(buf[kept:])
		if bytes.Contains(buf[:kept+n], marker) {
			return nil
		}
		switch {
		case err == io.EOF:
			return fmt.Errorf("SSL_CERT_FILE %s holds no PEM certificate", file)
		case err != nil:
			return fmt.Errorf("reading the CA certificates of SSL_CERT_FILE: %w", err)
		}
		tail := min(len(marker)-1, kept+n)
		copy(buf, buf[kept+n-tail:kept+n])
		kept = tail
	}
}

// lazyRootsConfig verifies servers' certificates against the roots
// certPool(file, dirs) builds on the first handshake. The standard
// verification cannot take roots that are not there yet, so it is turned
// off and done here instead, as crypto/tls documents for VerifyConnection:
// the same chain building from the peer's certificates to the roots, for
// the name the connection was made to, on resumed connections too.
func lazyRootsConfig(file, dirs string) *tls.Config {
	roots := sync.OnceValues(func() (*x509.CertPool, error) { return certPool(file, dirs) })
	return &tls.Config{
		InsecureSkipVerify: true, // verified by VerifyConnection below
		VerifyConnection: func(cs tls.ConnectionState) error {
			pool, err := roots()
			if err != nil {
				return err
			}
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the server sent no certificate")
			}
			opts := x509.VerifyOptions{DNSName: cs.ServerName, Roots: pool, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err = cs.PeerCertificates[0].Verify(opts)
			return err
		},
	}
}
