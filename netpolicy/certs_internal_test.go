package netpolicy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckCertFileFindsTheFirstCertificateAnywhere: the check reads in
// pieces, so a certificate that begins far into the file, or across the
// end of one piece, is still found, and a file without one is still
// refused.
func TestCheckCertFileFindsTheFirstCertificateAnywhere(t *testing.T) {
	const marker = "-----BEGIN CERTIFICATE-----"
	dir := t.TempDir()
	for _, c := range []struct {
		name    string
		content string
		ok      bool
	}{
		{"at the start", marker + "\nMIIB\n-----END CERTIFICATE-----\n", true},
		{"after a long header", strings.Repeat("# comment line\n", 5000) + marker + "\n", true},
		{"across two reads", strings.Repeat("x", 16<<10-10) + marker + "\n", true},
		{"cut before it ends", strings.Repeat("x", 16<<10-10) + marker[:20], false},
		{"none in a large file", strings.Repeat("not a certificate\n", 20000), false},
		{"empty", "", false},
	} {
		file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
		if err := os.WriteFile(file, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := checkCertFile(file); (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want ok %v", c.name, err, c.ok)
		}
	}
	if err := checkCertFile(dir); err == nil || !strings.Contains(err.Error(), "SSL_CERT_FILE") {
		t.Errorf("a directory: err = %v, want an error naming the variable", err)
	}
}
