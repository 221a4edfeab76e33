package serve

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
)

// configSettle is how long the config file must stay quiet before a change
// is read: a save is a write and a rename, sometimes several.
const configSettle = 100 * time.Millisecond

// WatchConfig follows the config file at path while ctx lasts: each time
// another process changes it (mcpgate tools disable, mcpgate add, the
// settings page), apply gets the servers it now configures. Writers
// replace the file by renaming a new one over it, so the folder is
// watched (and, when path is a symlink, the target's folder too). A file
// that does not load (half written, invalid) is reported to logger and
// skipped; the last good configuration stays. Changes that leave the
// servers as they were are not applied. WatchConfig returns when ctx ends,
// or at once with an error if the file cannot be watched.
func WatchConfig(ctx context.Context, path string, logger *slog.Logger, apply func([]mcpgate.ServerConfig)) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching the config file: %w", err)
	}
	defer w.Close()
	names := map[string]bool{}
	watch := func(p string) error {
		dir := filepath.Dir(p)
		names[filepath.Join(dir, filepath.Base(p))] = true
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		return w.Add(dir)
	}
	if err := watch(path); err != nil {
		return fmt.Errorf("watching the config file: %w", err)
	}
	if target, err := filepath.EvalSymlinks(path); err == nil && target != path {
		if err := watch(target); err != nil {
			return fmt.Errorf("watching the config file: %w", err)
		}
	}
	// The servers the process started with are parsed only when the file
	// first changes: at start the caller has just loaded it, and parsing a
	// file of 1,000 servers again would delay its first answer.
	startData, _ := os.ReadFile(path)
	var last []mcpgate.ServerConfig
	parsed := false

	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if names[filepath.Clean(ev.Name)] {
				settle.Reset(configSettle)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			logger.Warn("watching the config file", "error", err)
		case <-settle.C:
			servers, err := loadServers(path)
			if err != nil {
				logger.Warn("the config file changed but does not load; keeping the last configuration", "error", mcpgate.Sanitize(err.Error(), 300))
				continue
			}
			if !parsed {
				last, _ = serversOf(path, startData)
				parsed = true
			}
			if reflect.DeepEqual(servers, last) {
				continue
			}
			last = servers
			apply(servers)
		}
	}
}

func loadServers(path string) ([]mcpgate.ServerConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return serversOf(path, data)
}

// serversOf reads the servers of the config file data, where empty data
// is a missing file: no servers. The list is never nil.
func serversOf(path string, data []byte) ([]mcpgate.ServerConfig, error) {
	var servers []mcpgate.ServerConfig
	if len(data) > 0 {
		f, err := config.Parse(path, data)
		if err != nil {
			return nil, err
		}
		servers = f.Servers()
	}
	if servers == nil {
		servers = []mcpgate.ServerConfig{}
	}
	return servers, nil
}
