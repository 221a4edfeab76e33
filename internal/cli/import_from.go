package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/internal/hosts"
)

// importFromAll is the --from value that reads every host found.
const importFromAll = "all"

// selfReason is the skip reason of the entry mcpgate install wrote.
const selfReason = "this is mcpgate itself"

// hostSources finds and reads the config of --from's host, or of every
// host whose config is on this machine.
func hostSources(app *App, opts *importOptions, format config.Format) ([]importSource, error) {
	from := strings.TrimSpace(opts.From)
	if from == "" {
		return nil, usageErrorf("--from needs a host (one of %s), or all", strings.Join(hosts.IDs(), ", "))
	}
	scope := hosts.Scope(opts.Scope.value)
	env, err := app.hostsEnv()
	if err != nil {
		return nil, err
	}
	if from == importFromAll {
		if opts.formatSet {
			return nil, usageErrorf("--format cannot go with --from all: each host's config is read in its own format")
		}
		return allHostSources(app, env, scope)
	}
	h, err := hosts.Lookup(from)
	if err != nil {
		return nil, &UsageError{Err: fmt.Errorf("--from: %w", err)}
	}
	if opts.formatSet && format != config.FormatAuto && string(format) != h.ID {
		return nil, usageErrorf("--format %s disagrees with --from %s: %s's config is read in its own format; drop --format", format, h.ID, h.Name)
	}
	paths, err := h.Paths(env, scope)
	if errors.Is(err, hosts.ErrNoScope) {
		return nil, usageErrorf("%s has no project config; import it with --scope user", h.Name)
	}
	if err != nil {
		return nil, err
	}
	path, ok := firstExisting(paths)
	if !ok {
		return nil, fmt.Errorf("%s's %s config was not found: looked at %s (mcpgate install --list shows where each host keeps its config)",
			h.Name, scope, strings.Join(paths, ", "))
	}
	src, err := readHostSource(app, h, path)
	if err != nil {
		return nil, err
	}
	return []importSource{src}, nil
}

// allHostSources reads the config of every host that has one in scope,
// in the hosts' order. A config that cannot be read stops the import:
// nothing is imported from the others either.
func allHostSources(app *App, env hosts.Env, scope hosts.Scope) ([]importSource, error) {
	var sources []importSource
	for _, h := range hosts.All() {
		paths, err := h.Paths(env, scope)
		if errors.Is(err, hosts.ErrNoScope) {
			continue
		}
		if err != nil {
			return nil, err
		}
		path, ok := firstExisting(paths)
		if !ok {
			continue
		}
		src, err := readHostSource(app, h, path)
		if err != nil {
			return nil, fmt.Errorf("%w; nothing was imported (import the other hosts one by one: mcpgate import --from HOST)", err)
		}
		sources = append(sources, src)
	}
	if len(sources) == 0 {
		where := env.Home
		if scope == hosts.ScopeProject {
			where = env.Dir
		}
		return nil, fmt.Errorf("no agent host's %s config was found in %s (mcpgate install --list shows where each host keeps its config)", scope, where)
	}
	return sources, nil
}

// firstExisting is the first of paths that exists (as anything: a folder
// in its place is an error when it is read).
func firstExisting(paths []string) (string, bool) {
	for _, p := range paths {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			return p, true
		}
	}
	return "", false
}

// readHostSource reads h's config at path in h's format. A file with no
// MCP servers in it (empty, or without the host's key) has nothing to
// import, which is no error.
func readHostSource(app *App, h hosts.Host, path string) (importSource, error) {
	data, err := readImport(app, path)
	if err != nil {
		return importSource{}, err
	}
	format := config.Format(h.ID)
	res := &config.ImportResult{Format: format}
	if len(bytes.TrimSpace(data)) > 0 {
		res, err = config.ParseImportFile(path, data, format)
		switch {
		case errors.Is(err, config.ErrNoServers):
			res = &config.ImportResult{Format: format}
		case err != nil:
			return importSource{}, fmt.Errorf("reading %s's config %s: %w", h.Name, path, err)
		}
	}
	skipSelf(h, path, res)
	return importSource{host: h, file: path, res: res}, nil
}

// skipSelf gives the entry mcpgate install wrote into h's config at path,
// the one that runs `mcpgate serve`, its own reason: it is skipped
// anyway as a local command, but that reason would suggest something is
// lost.
func skipSelf(h hosts.Host, path string, res *config.ImportResult) {
	argv, found, err := hosts.Entry(h, path)
	if err != nil || !found || len(argv) < 2 || argv[1] != "serve" {
		return
	}
	for i, s := range res.Skipped {
		if s.Name == hosts.EntryName {
			res.Skipped[i].Reason = selfReason
		}
	}
}

// mergeSources is every source's servers as one import. A server whose ID
// an earlier source already brings is moved to its source's skipped
// entries with the reason: the same server, or another one by that name.
func mergeSources(sources []importSource) *config.ImportResult {
	all := &config.ImportResult{}
	if len(sources) == 1 {
		all.Format = sources[0].res.Format
	}
	type origin struct {
		cfg  mcpgate.ServerConfig
		from string
	}
	taken := make(map[string]origin)
	for _, src := range sources {
		res := src.res
		from := src.host.Name
		if from == "" {
			from = src.file
		}
		var kept []mcpgate.ServerConfig
		for _, s := range res.Servers {
			prev, dup := taken[s.ID]
			switch {
			case !dup:
				taken[s.ID] = origin{s, from}
				kept = append(kept, s)
				continue
			case prev.cfg.Binding() == s.Binding():
				res.Skipped = append(res.Skipped, config.Skipped{Name: s.ID, Reason: fmt.Sprintf("the same server as %s's %q, imported from there", prev.from, s.ID)})
			default:
				res.Skipped = append(res.Skipped, config.Skipped{Name: s.ID, Reason: fmt.Sprintf(
					"server ID %q is already taken by %s's, a different server (%s); add this one with another name: mcpgate add NAME %s",
					s.ID, prev.from, mcpgate.ShowURL(prev.cfg.URL), mcpgate.ShowURL(s.URL))})
			}
			res.Notes = slices.DeleteFunc(res.Notes, func(n config.Note) bool { return n.Name == s.ID })
		}
		res.Servers = kept
		slices.SortStableFunc(res.Skipped, func(a, b config.Skipped) int { return strings.Compare(a.Name, b.Name) })
		all.Servers = append(all.Servers, kept...)
	}
	return all
}

// writeHostsImport prints an import from every host, each under its name.
func writeHostsImport(out io.Writer, cfgPath string, sources []importSource, imported int) {
	for _, src := range sources {
		res := src.res
		fmt.Fprintf(out, "%s (%s):\n", src.host.Name, src.file)
		if len(res.Servers)+len(res.Skipped) == 0 {
			fmt.Fprintln(out, "  no MCP servers in it")
		}
		tw := newTable(out)
		for _, s := range res.Servers {
			fmt.Fprintf(tw, "  imported\t%s\t%s\tauth %s%s\n", s.ID, mcpgate.ShowURL(s.URL), s.Auth, headerSummary(s, res.EnvUses()))
		}
		tw.Flush()
		for _, n := range res.Notes {
			fmt.Fprintf(out, "  note %s: %s\n", n.Name, firstLine(n.Text, 300))
		}
		for _, s := range res.Skipped {
			fmt.Fprintf(out, "  skipped %s: %s\n", firstLine(s.Name, 80), firstLine(s.Reason, 300))
		}
	}
	if imported == 0 {
		fmt.Fprintf(out, "Nothing to import from %d %s; the config is unchanged.\n", len(sources), plural(len(sources), "host", "hosts"))
		return
	}
	fmt.Fprintf(out, "Imported %d %s from %d %s into %s.\n", imported, plural(imported, "server", "servers"), len(sources), plural(len(sources), "host", "hosts"), cfgPath)
}

// importJSON is import --json's output.
type importJSON struct {
	// Config is mcpgate's config file; Changed says it was written.
	Config  string             `json:"config"`
	Changed bool               `json:"changed"`
	Sources []importSourceJSON `json:"sources"`
}

// importSourceJSON is one file read: a FILE, or a host's config.
type importSourceJSON struct {
	Host     string `json:"host,omitempty"` // the host's ID, for --from
	HostName string `json:"hostName,omitempty"`
	File     string `json:"file"`
	// Format is the format the file was read as; Detected, when it was
	// told from the file, from what.
	Format   string             `json:"format"`
	Detected string             `json:"detected,omitempty"`
	Imported []importedJSON     `json:"imported"`
	Skipped  []skippedJSON      `json:"skipped"`
	Notes    []importedNoteJSON `json:"notes"`
}

// skippedJSON is an entry not imported, by its name in the file.
type skippedJSON struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// importedJSON is an imported server. Headers are named, never valued.
type importedJSON struct {
	ID      string   `json:"id"`
	Name    string   `json:"name,omitempty"`
	URL     string   `json:"url"`
	Enabled bool     `json:"enabled"`
	Auth    string   `json:"auth"`
	Headers []string `json:"headers"`
	// Env lists the environment variables the headers read.
	Env []string `json:"env"`
}

type importedNoteJSON struct {
	Server string `json:"server"`
	Text   string `json:"text"`
}

func importReport(cfgPath string, changed bool, sources []importSource) importJSON {
	rep := importJSON{Config: cfgPath, Changed: changed, Sources: []importSourceJSON{}}
	for _, src := range sources {
		res := src.res
		j := importSourceJSON{
			Host: src.host.ID, HostName: src.host.Name, File: src.file,
			Format: string(res.Format), Detected: res.Detected,
			Imported: []importedJSON{}, Skipped: []skippedJSON{}, Notes: []importedNoteJSON{},
		}
		uses := res.EnvUses()
		for _, s := range res.Servers {
			env := []string{}
			for _, u := range uses {
				if u.Server == s.ID && !slices.Contains(env, u.Variable) {
					env = append(env, u.Variable)
				}
			}
			slices.Sort(env)
			j.Imported = append(j.Imported, importedJSON{
				ID: s.ID, Name: s.Name, URL: mcpgate.ShowURL(s.URL), Enabled: s.Enabled, Auth: string(s.Auth),
				Headers: append([]string{}, slices.Sorted(maps.Keys(s.Headers))...), Env: env,
			})
		}
		for _, s := range res.Skipped {
			j.Skipped = append(j.Skipped, skippedJSON{Name: s.Name, Reason: s.Reason})
		}
		for _, n := range res.Notes {
			j.Notes = append(j.Notes, importedNoteJSON{Server: n.Name, Text: n.Text})
		}
		rep.Sources = append(rep.Sources, j)
	}
	return rep
}
