// Command fakebrowser stands in for a web browser in tests, used as
// $BROWSER. It appends its arguments as one JSON array line to the file
// named by $FAKEBROWSER_LOG (if set), then, given exactly one argument that
// is an http URL on 127.0.0.1, [::1] or localhost, GETs it, following
// redirects that stay on those hosts, for at most ten seconds. So an
// authorize URL of the fake authorization server lands on the client's
// loopback callback, as a person's click would.
//
// It exits 0 once it has an HTTP response (whatever its status), 1 if it
// could not visit the URL, 2 if not given exactly one argument. Its source
// is built by fake.BuildBrowser, standalone: it uses only the standard
// library.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"
)

func main() {
	args := os.Args[1:]
	if err := record(args); err != nil {
		fmt.Fprintln(os.Stderr, "fakebrowser: logging:", err)
		os.Exit(1)
	}
	if len(args) != 1 {
		fmt.Fprintf(os.Stderr, "fakebrowser: want one argument, a URL; got %d\n", len(args))
		os.Exit(2)
	}
	status, err := visit(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakebrowser:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "fakebrowser: final answer", status)
}

func record(args []string) error {
	path := os.Getenv("FAKEBROWSER_LOG")
	if path == "" {
		return nil
	}
	if args == nil {
		args = []string{}
	}
	line, err := json.Marshal(args)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	// One write per line, so concurrent browsers do not interleave.
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// visit GETs raw and follows loopback redirects; it returns the final status.
func visit(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || !loopback(u) {
		return "", errors.New("not visiting: only http URLs on 127.0.0.1, [::1] or localhost")
	}
	client := &http.Client{
		Timeout: 10 * time.Second,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("too many redirects")
			}
			if !loopback(req.URL) {
				return errors.New("not following a redirect off loopback")
			}
			return nil
		},
	}
	resp, err := client.Get(u.String())
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.Status, nil
}

func loopback(u *url.URL) bool {
	if u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
