package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/internal/names"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/netpolicy"
	"github.com/mcpgate/mcpgate/oauth"
	"github.com/mcpgate/mcpgate/serve"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// storeFileName is the credential store's file in the data directory.
const storeFileName = "mcpgate.db"

// IO is where a command reads and writes. The TTY flags decide whether
// progress is drawn and whether an elicitation may be asked; [NewIO] sets
// them from the files, tests set them directly.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	InTTY, OutTTY, ErrTTY bool
}

// NewIO returns an IO over the given streams, detecting terminals.
func NewIO(in io.Reader, out, errOut io.Writer) *IO {
	return &IO{
		In: in, Out: out, ErrOut: errOut,
		InTTY: isTerminal(in), OutTTY: isTerminal(out), ErrTTY: isTerminal(errOut),
	}
}

// App is what every command shares for one invocation: its streams, its
// environment, the paths chosen by flags or environment, the credential
// store and the manager. The store is opened only by commands that need
// credentials (those that connect, auth, logout, add --auth bearer), so
// commands that only read or edit the config never create a key.
type App struct {
	IO *IO
	// Getenv reads the environment: MCPGATE_CONFIG and MCPGATE_DATA_DIR
	// here, MCPGATE_SECRET_KEY and MCPGATE_KEYRING for the store's key,
	// BROWSER for sign-ins, ${VAR} references and bearer tokens in the
	// manager, HTTPS_PROXY, NO_PROXY and SSL_CERT_FILE for the network.
	Getenv func(string) string

	// openBrowser shows a sign-in page to the person; nil means
	// oauth.OpenBrowser with $BROWSER. The demo replaces it with a visit
	// made in-process, so it never opens a real browser.
	openBrowser func(url string) error

	configFlag  string // --config
	dataDirFlag string // --data-dir

	// elicit answers form elicitations for the manager; nil declines them.
	// A command sets it before its first call to Manager.
	elicit func(context.Context, *manager.ElicitRequest) (*mcp.ElicitResult, error)

	store     store.Store
	keySource seal.Source
	oauth     *oauth.Client
	// network carries every request to remote servers, the manager's and
	// the oauth client's, under the network policy; closed with the App so
	// no idle connection outlives the invocation.
	network *netpolicy.Transport
	// netOptions, when set, are the network's resolver and dialer (tests
	// give a netpolicytest network); Getenv still supplies the
	// environment.
	netOptions *netpolicy.Options

	// onStateChange, onLog and logger, when set before the first call to
	// Manager, go to the manager (serve mirrors catalogs, forwards servers'
	// log messages to its host and logs to stderr).
	onStateChange func(manager.Status)
	//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
	onLog  func(server string, msg *mcp.LoggingMessageParams)
	logger *slog.Logger
	// refreshCached, set before the first call to Manager by commands
	// that keep running (serve, ui), connects in the background a server
	// whose stored catalog answered, so the process soon holds the live
	// one. One-shot commands answer from the stored catalog alone.
	refreshCached bool
	// ownsProcess says the invocation is the whole process (Main), not a
	// call inside a test or a program that embeds the CLI, so process-wide
	// settings such as the collector's are its to choose.
	ownsProcess bool

	mgr     *manager.Manager
	closers []func()
}

// ConfigPath is --config, else $MCPGATE_CONFIG, else the XDG default.
func (a *App) ConfigPath() (string, error) {
	if a.configFlag != "" {
		return a.configFlag, nil
	}
	if p := a.Getenv("MCPGATE_CONFIG"); p != "" {
		return p, nil
	}
	p, err := config.DefaultPath()
	if err != nil {
		return "", fmt.Errorf("finding the config file (set --config or MCPGATE_CONFIG): %w", err)
	}
	return p, nil
}

// DataDir is --data-dir, else $MCPGATE_DATA_DIR, else the XDG default. It
// is not created; see [App.EnsureDataDir].
func (a *App) DataDir() (string, error) {
	if a.dataDirFlag != "" {
		return a.dataDirFlag, nil
	}
	if p := a.Getenv("MCPGATE_DATA_DIR"); p != "" {
		return p, nil
	}
	p, err := config.DefaultDataDir()
	if err != nil {
		return "", fmt.Errorf("finding the data directory (set --data-dir or MCPGATE_DATA_DIR): %w", err)
	}
	return p, nil
}

// EnsureDataDir returns the data directory, creating it (0700) if needed.
// Only commands that store something call it, so reading commands never
// leave a directory behind.
func (a *App) EnsureDataDir() (string, error) {
	dir, err := a.DataDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the data directory: %w", err)
	}
	return dir, nil
}

// Config loads the config file; a missing file is an empty config.
func (a *App) Config() (*config.File, error) {
	path, err := a.ConfigPath()
	if err != nil {
		return nil, err
	}
	return config.Load(path)
}

// Server returns the configured server id, or a not-found error that
// suggests the closest configured names.
func (a *App) Server(id string) (mcpgate.ServerConfig, error) {
	if err := mcpgate.ValidateID(id); err != nil {
		return mcpgate.ServerConfig{}, err
	}
	cfg, err := a.Config()
	if err != nil {
		return mcpgate.ServerConfig{}, err
	}
	s, ok := cfg.Server(id)
	if !ok {
		msg := fmt.Sprintf("no server named %q is configured", id)
		var known []string
		for _, s := range cfg.Servers() {
			known = append(known, s.ID)
		}
		if c := names.Closest(id, known, 3); len(c) > 0 {
			msg += "; did you mean " + strings.Join(c, ", ") + "?"
		}
		return s, &mcpgate.Error{Category: mcpgate.CategoryNotFound, Message: msg}
	}
	return s, nil
}

// Store opens the credential store on first use: <data-dir>/mcpgate.db,
// its secrets sealed with the key [seal.Load] finds ($MCPGATE_SECRET_KEY,
// else the OS keyring unless MCPGATE_KEYRING=off, else the key file in the
// data directory, created if needed).
func (a *App) Store() (store.Store, error) {
	if a.store != nil {
		return a.store, nil
	}
	dir, err := a.EnsureDataDir()
	if err != nil {
		return nil, err
	}
	sealer, src, err := seal.Load(seal.LoadOptions{DataDir: dir, Getenv: a.Getenv, Notice: func(msg string) {
		fmt.Fprintf(a.IO.ErrOut, "mcpgate: note: %s\n", msg)
	}})
	if err != nil {
		return nil, fmt.Errorf("opening the credential store: %w", err)
	}
	st, err := sqlite.Open(filepath.Join(dir, storeFileName), sealer)
	if err != nil {
		return nil, fmt.Errorf("opening the credential store: %w", err)
	}
	a.store, a.keySource = st, src
	return st, nil
}

// storePath is where the credential store is (or would be).
func (a *App) storePath() string {
	dir, err := a.DataDir()
	if err != nil {
		return storeFileName + " in the data directory"
	}
	return filepath.Join(dir, storeFileName)
}

// keySourceText says in words where the open store's key came from.
func (a *App) keySourceText() string {
	if a.keySource == "" {
		return "nowhere yet (the store is not open)"
	}
	dir, _ := a.DataDir()
	return keySourceName(a.keySource, dir)
}

// OAuth returns the authorization client over the store, opening it on
// first use.
func (a *App) OAuth() (*oauth.Client, error) {
	if a.oauth != nil {
		return a.oauth, nil
	}
	st, err := a.Store()
	if err != nil {
		return nil, err
	}
	network, err := a.Network()
	if err != nil {
		return nil, err
	}
	a.oauth = oauth.New(&oauth.Options{
		Store:      st,
		HTTPClient: &http.Client{Transport: network},
		Getenv:     a.Getenv,
		ClientName: "mcpgate",
	})
	return a.oauth, nil
}

// Network returns the transport of every request to remote servers,
// building it on first use: the network policy (package netpolicy) with
// the proxies and certificate authorities the environment names. The
// manager and the oauth client share it, so one policy and one set of
// connection pools serve an invocation.
func (a *App) Network() (*netpolicy.Transport, error) {
	if a.network != nil {
		return a.network, nil
	}
	opts := netpolicy.Options{}
	if a.netOptions != nil {
		opts = *a.netOptions
	}
	opts.Getenv = a.Getenv
	tr, err := netpolicy.New(&opts)
	if err != nil {
		return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "setting up the network: %w", err)
	}
	a.network = tr
	return tr, nil
}

// browser opens url for the person through the openBrowser seam.
func (a *App) browser(url string) error {
	if a.openBrowser != nil {
		return a.openBrowser(url)
	}
	return oauth.OpenBrowser(url, a.Getenv)
}

// Manager returns the manager over the configured servers, building it on
// first use, with the oauth client authorizing servers that sign in or
// keep a stored token. It connects nothing by itself: each command
// connects what it needs, and [App.Close] closes every session. The
// store keeps each server's last catalog, so list, search and describe
// answer from it without connecting (manager.Options.Catalogs).
func (a *App) Manager() (*manager.Manager, error) {
	if a.mgr != nil {
		return a.mgr, nil
	}
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	client, err := a.OAuth()
	if err != nil {
		return nil, err
	}
	network, err := a.Network()
	if err != nil {
		return nil, err
	}
	// The sink is closed (its last entries written) after the manager, so
	// the requests of closing sessions are in it, and before the store.
	sink := serve.NewRequestLog(a.store)
	a.onClose(sink.Close)
	catalogs, _ := a.store.(store.CatalogStore)
	m, err := manager.New(cfg.Servers(), &manager.Options{
		Catalogs:      catalogs,
		RefreshCached: a.refreshCached,
		HTTPClient:    &http.Client{Transport: network},
		RequestLog:    sink.For(""),
		ClientName:    "mcpgate",
		ClientVersion: Version(),
		Getenv:        a.Getenv,
		Elicit:        a.elicit,
		OnStateChange: a.onStateChange,
		OnLog:         a.onLog,
		Authorizer:    client,
		Logger:        a.logger,
	})
	if err != nil {
		return nil, err
	}
	a.mgr = m
	return m, nil
}

// onClose registers f to run when the invocation ends, after the manager
// has closed, so nothing still uses what f releases.
func (a *App) onClose(f func()) { a.closers = append(a.closers, f) }

// Close ends the invocation: it closes the manager (every session, cleanly),
// runs what commands registered with onClose, then closes the store, which
// the manager's sessions used until they closed.
func (a *App) Close() {
	if a.mgr != nil {
		_ = a.mgr.Close() // nothing useful to do about a failed goodbye
		a.mgr = nil
	}
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
	if a.network != nil {
		a.network.CloseIdleConnections()
		a.network = nil
	}
	a.oauth = nil
	if a.store != nil {
		_ = a.store.Close() // every write has committed; nothing is lost
		a.store = nil
	}
}

// readBuildInfo is the build's own record; tests give another.
var readBuildInfo = debug.ReadBuildInfo

// Version is the module version of the binary (v1.2.0, or the
// pseudo-version `go install ...@commit` records), or "dev" for a build
// from a checkout, which Go records as "(devel)".
func Version() string {
	bi, ok := readBuildInfo()
	if !ok {
		return "dev"
	}
	return moduleVersion(bi)
}

func moduleVersion(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	return "dev"
}

// versionLine is what --version prints: the module version, then what
// the build recorded of its commit, and the Go version:
// "v1.2.0 (commit 1a2b3c4d5e6f, 2026-12-01, with local changes; go1.26.0)".
func versionLine() string {
	bi, ok := readBuildInfo()
	if !ok {
		return "dev"
	}
	return describeBuild(bi)
}

// describeBuild is the version line of bi.
func describeBuild(bi *debug.BuildInfo) string {
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var parts []string
	if rev != "" {
		parts = append(parts, "commit "+rev[:min(12, len(rev))])
		if t, err := time.Parse(time.RFC3339, at); err == nil {
			parts = append(parts, t.UTC().Format(time.DateOnly))
		}
		if modified {
			parts = append(parts, "with local changes")
		}
	}
	line := moduleVersion(bi)
	switch {
	case len(parts) > 0 && bi.GoVersion != "":
		line += " (" + strings.Join(parts, ", ") + "; " + bi.GoVersion + ")"
	case len(parts) > 0:
		line += " (" + strings.Join(parts, ", ") + ")"
	case bi.GoVersion != "":
		line += " (" + bi.GoVersion + ")"
	}
	return line
}
