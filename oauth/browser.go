package oauth

import (
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"unicode"

	"github.com/mcpgate/mcpgate"
)

// OpenBrowser opens rawURL in the person's browser. Only an http or https
// URL that parses cleanly is opened, and it is passed to the program as one
// argument with exec, never through a shell, so nothing in it can run as a
// command. $BROWSER (getenv) is honoured the same way: its first entry
// (entries are separated by ':', ';' on Windows), split on spaces into a program and its
// arguments; "%s" in an argument is replaced by the URL, else the URL is
// appended.
func OpenBrowser(rawURL string, getenv func(string) string) error {
	u, err := safeURL(rawURL)
	if err != nil {
		return err
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	argv := browserCommand(runtime.GOOS, getenv("BROWSER"), u)
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		return mcpgate.Errorf(mcpgate.CategoryInvalid, "opening the browser with %s: %v", argv[0], err)
	}
	go cmd.Wait() // reap it; browsers hand off to a running instance and exit
	return nil
}

// safeURL accepts only a cleanly parsing absolute http(s) URL without
// whitespace or control characters, and returns its canonical form.
func safeURL(raw string) (string, error) {
	if strings.IndexFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "", mcpgate.Errorf(mcpgate.CategoryProtocol, "refusing to open a URL containing whitespace or control characters")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "", mcpgate.Errorf(mcpgate.CategoryProtocol, "refusing to open a URL that does not parse cleanly")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", mcpgate.Errorf(mcpgate.CategoryProtocol, "refusing to open a %q URL; only http and https are opened", u.Scheme)
	}
	if strings.HasPrefix(u.String(), "-") {
		return "", mcpgate.Errorf(mcpgate.CategoryProtocol, "refusing to open a URL that looks like an option")
	}
	return u.String(), nil
}

// browserCommand is the program and arguments that open u on goos: $BROWSER
// (env) when set, else the OS's own opener. The URL is always one
// argument of its own and no opener is a shell: on Windows, rundll32 hands
// it to the URL protocol handler as it is, where "cmd /c start" would
// treat & and ^ in its query as commands (safeURL leaves no space or quote
// in the URL, so Windows passes it to rundll32 unquoted, as it expects). $BROWSER's entries are
// separated as PATH's are on goos (';' on Windows, where ':' follows a
// drive letter).
func browserCommand(goos, env, u string) []string {
	sep := ":"
	if goos == "windows" {
		sep = ";"
	}
	if first, _, _ := strings.Cut(env, sep); strings.TrimSpace(first) != "" {
		fields := strings.Fields(first)
		replaced := false
		for i, f := range fields[1:] {
			if strings.Contains(f, "%s") {
				fields[i+1] = strings.ReplaceAll(f, "%s", u)
				replaced = true
			}
		}
		if !replaced {
			fields = append(fields, u)
		}
		return fields
	}
	switch goos {
	case "darwin":
		return []string{"open", u}
	case "windows":
		return []string{"rundll32", "url.dll,FileProtocolHandler", u}
	}
	return []string{"xdg-open", u}
}
