package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
// environment, the paths chosen by flags or environment, and the manager,
// which is built only when a command needs a connection.
type App struct {
	IO *IO
	// Getenv reads the environment: MCPGATE_CONFIG and MCPGATE_DATA_DIR
	// here, ${VAR} references and bearer tokens in the manager.
	Getenv func(string) string

	configFlag  string // --config
	dataDirFlag string // --data-dir

	// elicit answers form elicitations for the manager; nil declines them.
	// A command sets it before its first call to Manager.
	elicit func(context.Context, *manager.ElicitRequest) (*mcp.ElicitResult, error)

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

// Manager returns the manager over the configured servers, building it on
// first use. It connects nothing by itself: each command connects what it
// needs, and [App.Close] closes every session.
func (a *App) Manager() (*manager.Manager, error) {
	if a.mgr != nil {
		return a.mgr, nil
	}
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	m, err := manager.New(cfg.Servers(), &manager.Options{
		ClientName:    "mcpgate",
		ClientVersion: Version(),
		Getenv:        a.Getenv,
		Elicit:        a.elicit,
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
// then runs what commands registered with onClose.
func (a *App) Close() {
	if a.mgr != nil {
		_ = a.mgr.Close() // nothing useful to do about a failed goodbye
		a.mgr = nil
	}
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}

// Version is the module version of the binary, or "dev".
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
