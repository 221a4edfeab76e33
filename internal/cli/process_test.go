package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/internal/testbin"
)

// mcpgateBinary is the mcpgate command, built once per test run, with
// the race detector when the tests have it.
func mcpgateBinary(t testing.TB) string { return testbin.Mcpgate(t) }

// binary is the mcpgate a command of these tests runs as. Long-lived
// processes (serve, ui) are race-built when the tests are: they run
// their own goroutines side by side with other processes for as long as
// a test lasts. A one-shot command (add, auth, call, list, status...) is
// built without the race detector: the same commands run in-process
// under it (the harness's tests), what only a separate process shows is
// files, locks and output shared between processes, and the dozens of
// them these tests start took several times the CPU race-built.
func (p *procs) binary(args []string) string {
	if len(args) > 0 && (args[0] == "serve" || args[0] == "ui") {
		return p.longLived
	}
	return p.oneShot
}

// procs runs the mcpgate binary as separate processes sharing one config
// and data directory, the way a person's shell and their agents do. Each
// process gets a home of its own, the OS keyring turned off, and the fake
// browser as $BROWSER. Every output is kept so that secretsLeaked can
// check none of it holds a secret.
type procs struct {
	t                  testing.TB
	longLived, oneShot string // see binary
	cfg, dataDir       string
	browserLog         string
	env                []string

	mu      sync.Mutex
	outputs []string
}

func newProcs(t testing.TB) *procs {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	p := &procs{
		t: t, longLived: mcpgateBinary(t), oneShot: testbin.McpgateWithoutRace(t),
		cfg:        filepath.Join(dir, "config.json"),
		dataDir:    filepath.Join(dir, "data"),
		browserLog: filepath.Join(dir, "browser.log"),
	}
	// What fake.UseBrowser sets, but per process, so these tests can run
	// in parallel.
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "MCPGATE_") || strings.HasPrefix(k, "XDG_") ||
			slices.Contains([]string{"HOME", "BROWSER", "FAKEBROWSER_LOG", "DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS"}, k) {
			continue
		}
		p.env = append(p.env, kv)
	}
	p.env = append(p.env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"), "MCPGATE_KEYRING=off",
		"BROWSER="+fake.BuildBrowser(t), "FAKEBROWSER_LOG="+p.browserLog)
	return p
}

// command prepares mcpgate --config CFG --data-dir DATA args..., killed
// if it outlives the test's patience.
func (p *procs) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, p.binary(args), append([]string{"--config", p.cfg, "--data-dir", p.dataDir}, args...)...)
	cmd.Env = p.env
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// running is a started mcpgate process.
type running struct {
	p           *procs
	cmd         *exec.Cmd
	cancel      context.CancelFunc
	out, errOut bytes.Buffer
}

// start starts mcpgate with stdin; wait collects it.
func (p *procs) start(stdin string, args ...string) *running {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	r := &running{p: p, cancel: cancel}
	r.cmd = p.command(ctx, args...)
	r.cmd.Stdin = strings.NewReader(stdin)
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.errOut
	if err := r.cmd.Start(); err != nil {
		cancel()
		p.t.Fatal(err)
	}
	return r
}

func (r *running) wait() result {
	defer r.cancel()
	err := r.cmd.Wait()
	return r.p.finish(r.cmd, err, r.out.String(), r.errOut.String())
}

// finish turns a finished process into a result, keeping its output.
func (p *procs) finish(cmd *exec.Cmd, err error, stdout, stderr string) result {
	p.t.Helper()
	res := result{code: cmd.ProcessState.ExitCode(), stdout: stdout, stderr: stderr}
	if err != nil {
		if _, ok := errors.AsType[*exec.ExitError](err); !ok {
			p.t.Fatalf("mcpgate %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, res)
		}
	}
	if strings.Contains(stderr, "DATA RACE") {
		p.t.Errorf("mcpgate %s had a data race:\n%s", strings.Join(cmd.Args[1:], " "), stderr)
	}
	p.mu.Lock()
	p.outputs = append(p.outputs, stdout, stderr)
	p.mu.Unlock()
	return res
}

func (p *procs) run(stdin string, args ...string) result {
	p.t.Helper()
	return p.start(stdin, args...).wait()
}

// mustRun runs args with empty stdin and fails the test unless the exit
// code is want.
func (p *procs) mustRun(want int, args ...string) result {
	p.t.Helper()
	r := p.run("", args...)
	if r.code != want {
		p.t.Fatalf("mcpgate %s: want exit %d, got:\n%s", strings.Join(args, " "), want, r)
	}
	return r
}

// interactive is a started mcpgate whose stdin the test writes and whose
// stderr it reads line by line, as a person at a terminal would.
type interactive struct {
	*running
	stdin io.WriteCloser
	lines chan string // stderr, line by line; closed at its end
	done  chan struct{}
}

func (p *procs) startInteractive(args ...string) *interactive {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	in := &interactive{running: &running{p: p, cancel: cancel}, lines: make(chan string, 100), done: make(chan struct{})}
	in.cmd = p.command(ctx, args...)
	in.cmd.Stdout = &in.out
	var err error
	if in.stdin, err = in.cmd.StdinPipe(); err != nil {
		p.t.Fatal(err)
	}
	stderr, err := in.cmd.StderrPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := in.cmd.Start(); err != nil {
		cancel()
		p.t.Fatal(err)
	}
	go func() {
		defer close(in.done)
		defer close(in.lines)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			in.errOut.WriteString(sc.Text() + "\n")
			select {
			case in.lines <- sc.Text():
			default: // nobody is reading; the text is kept in errOut
			}
		}
	}()
	return in
}

// authURL waits for the sign-in URL mcpgate prints after "Open this URL".
func (in *interactive) authURL() string {
	in.p.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-in.lines:
			if !ok {
				in.p.t.Fatalf("mcpgate printed no sign-in URL; stderr:\n%s", in.errOut.String())
			}
			if s := strings.TrimSpace(line); strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
				return s
			}
		case <-timeout:
			in.p.t.Fatal("mcpgate printed no sign-in URL in time")
		}
	}
}

// waitFor waits until mcpgate prints a line of stderr holding text.
func (in *interactive) waitFor(text string) {
	in.p.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-in.lines:
			if !ok {
				in.p.t.Fatalf("mcpgate ended without printing %q", text)
			}
			if strings.Contains(line, text) {
				return
			}
		case <-timeout:
			in.p.t.Fatalf("mcpgate did not print %q in time", text)
		}
	}
}

func (in *interactive) wait() result {
	in.stdin.Close()
	<-in.done // the scanner has all of stderr before Wait closes the pipe
	return in.running.wait()
}

// secretsLeaked reports every secret of the authorization servers found in
// the outputs of the processes, in the config file, or in plaintext in the
// credential store's files. The sign-in URL mcpgate prints for the person
// to open necessarily carries the state parameter (which the fake counts
// as a secret): those URLs are removed from the outputs first, and their
// states are not looked for in the store, which keeps a login's state as
// its key while the login runs.
func (p *procs) secretsLeaked(servers ...*fake.AuthServer) []string {
	p.t.Helper()
	p.mu.Lock()
	outputs := slices.Clone(p.outputs)
	p.mu.Unlock()
	var states []string
	for i, out := range outputs {
		outputs[i], states = withoutAuthURLs(out, states, servers)
	}
	files := map[string][]byte{}
	for _, path := range []string{p.cfg, filepath.Join(p.dataDir, storeFileName),
		filepath.Join(p.dataDir, storeFileName+"-wal"), filepath.Join(p.dataDir, storeFileName+"-shm")} {
		if b, err := os.ReadFile(path); err == nil {
			files[path] = b
		}
	}
	var leaks []string
	for _, as := range servers {
		for _, secret := range as.Secrets() {
			for _, out := range outputs {
				if strings.Contains(out, secret) {
					leaks = append(leaks, "output holds "+secret+" in:\n"+out)
				}
			}
			if slices.Contains(states, secret) {
				continue
			}
			for path, b := range files {
				if bytes.Contains(b, []byte(secret)) {
					leaks = append(leaks, path+" holds "+secret+" in plaintext")
				}
			}
		}
	}
	return leaks
}

// checkSecrets fails the test, when it ends, if a secret leaked.
func (p *procs) checkSecrets(servers ...*fake.AuthServer) {
	p.t.Cleanup(func() {
		for _, l := range p.secretsLeaked(servers...) {
			p.t.Error(l)
		}
	})
}

// withoutAuthURLs removes the authorization URLs of servers from out,
// collecting their state parameters.
func withoutAuthURLs(out string, states []string, servers []*fake.AuthServer) (string, []string) {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		s := strings.TrimSpace(l)
		for _, as := range servers {
			if strings.HasPrefix(s, as.AuthorizationEndpoint+"?") {
				if u, err := url.Parse(s); err == nil {
					states = append(states, u.Query()["state"]...)
				}
				lines[i] = "<sign-in URL>"
			}
		}
	}
	return strings.Join(lines, "\n"), states
}
