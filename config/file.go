package config

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"

	"github.com/mcpgate/mcpgate"
)

// File is the config file in memory. Its methods change only memory;
// [File.Save] writes it. A File is not safe for concurrent use.
//
// The zero File with a Path stands for a file that does not exist yet:
// Save refuses to overwrite one that appeared in the meantime.
type File struct {
	// Path is where Load read the file and where Save writes it.
	Path string

	top     []member          // top-level members as read, "mcpServers" included
	ids     []string          // server IDs in file order; new ones are appended
	servers map[string]*entry // by ID
	// sum is the SHA-256 of the file as last read or written, and existed
	// whether there was one; Save compares them with the disk.
	sum     [sha256.Size]byte
	existed bool
}

// Load reads the config file at path. A missing (or blank) file is an empty
// config. Malformed JSON is an [*mcpgate.Error] of [mcpgate.CategoryInvalid]
// naming the file, line and column; an invalid server entry is an error
// naming the server, the field and the rule it breaks.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &File{Path: path}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(path, data)
}

// Parse is Load of a file already read: data is what path holds.
func Parse(path string, data []byte) (*File, error) {
	f, err := parse(path, data)
	if err != nil {
		return nil, err
	}
	f.sum, f.existed = sha256.Sum256(data), true
	return f, nil
}

func parse(path string, data []byte) (*File, error) {
	f := &File{Path: path}
	data = trimBOM(data)
	if len(bytes.TrimSpace(data)) == 0 {
		return f, nil
	}
	if err := checkSyntax(data); err != nil {
		return nil, invalidf("config %s:%v", path, err)
	}
	top, err := decodeObject(data)
	if err != nil {
		return nil, invalidf("config %s: top level: %v", path, err)
	}
	f.top = top
	raw, ok := lookup(top, "mcpServers")
	if !ok {
		return f, nil
	}
	servers, err := decodeObject(raw)
	if err != nil {
		return nil, invalidf("config %s: mcpServers: %v (keyed by server ID)", path, err)
	}
	for _, m := range servers {
		e, err := decodeEntry(m.Key, m.Value)
		if err != nil {
			return nil, mcpgate.Errorf(mcpgate.CategoryOf(err), "config %s: %w", path, err)
		}
		f.put(e)
	}
	return f, nil
}

func (f *File) put(e *entry) {
	if f.servers == nil {
		f.servers = make(map[string]*entry)
	}
	if _, ok := f.servers[e.cfg.ID]; !ok {
		f.ids = append(f.ids, e.cfg.ID)
	}
	f.servers[e.cfg.ID] = e
}

// Servers returns every configured server, sorted by ID. They are copies:
// changing them does not change f.
func (f *File) Servers() []mcpgate.ServerConfig {
	out := make([]mcpgate.ServerConfig, 0, len(f.servers))
	for _, id := range slices.Sorted(maps.Keys(f.servers)) {
		out = append(out, clone(f.servers[id].cfg))
	}
	return out
}

// Server returns a copy of the server with the given ID.
func (f *File) Server(id string) (mcpgate.ServerConfig, bool) {
	e, ok := f.servers[id]
	if !ok {
		return mcpgate.ServerConfig{}, false
	}
	return clone(e.cfg), true
}

// Add validates s and adds it. If a server with its ID exists, Add returns
// an error of [mcpgate.CategoryConflict] unless replace is set; a replaced
// entry keeps the members mcpgate does not know. s is stored as given, so
// set s.Enabled: the zero value is a disabled server.
func (f *File) Add(s mcpgate.ServerConfig, replace bool) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if _, ok := f.servers[s.ID]; ok && !replace {
		return mcpgate.Errorf(mcpgate.CategoryConflict, "server %q already exists; use --replace to overwrite it", s.ID)
	}
	f.replace(s)
	return nil
}

// replace stores s, which must be valid, over any entry with its ID.
func (f *File) replace(s mcpgate.ServerConfig) {
	e := &entry{cfg: clone(s)}
	if old, ok := f.servers[s.ID]; ok {
		e.members = unknownMembers(old.members)
	}
	f.put(e)
}

// Remove deletes the server id.
func (f *File) Remove(id string) error {
	if _, err := f.entry(id); err != nil {
		return err
	}
	delete(f.servers, id)
	f.ids = slices.DeleteFunc(f.ids, func(s string) bool { return s == id })
	return nil
}

// SetEnabled enables or disables the server id.
func (f *File) SetEnabled(id string, enabled bool) error {
	e, err := f.entry(id)
	if err != nil {
		return err
	}
	e.cfg.Enabled = enabled
	return nil
}

// SetToolEnabled removes tool from, or adds it once to, the disabledTools
// of server id. The tool need not exist: a server's catalog can change, and
// a tool disabled before it appears stays disabled when it does.
func (f *File) SetToolEnabled(id, tool string, enabled bool) error {
	e, err := f.entry(id)
	if err != nil {
		return err
	}
	if tool == "" {
		return invalidf("server %q: tool name: must not be empty", id)
	}
	if enabled {
		e.cfg.DisabledTools = slices.DeleteFunc(e.cfg.DisabledTools, func(t string) bool { return t == tool })
	} else if !slices.Contains(e.cfg.DisabledTools, tool) {
		e.cfg.DisabledTools = append(e.cfg.DisabledTools, tool)
	}
	return nil
}

func (f *File) entry(id string) (*entry, error) {
	e, ok := f.servers[id]
	if !ok {
		return nil, mcpgate.Errorf(mcpgate.CategoryNotFound, "server %q is not configured", id)
	}
	return e, nil
}

// encode renders the whole file: the top-level members as read, with
// "mcpServers" rewritten in place (or added last).
func (f *File) encode() ([]byte, error) {
	servers := make([]member, 0, len(f.ids))
	for _, id := range f.ids {
		servers = append(servers, member{id, f.servers[id].encode()})
	}
	top := slices.Clone(f.top)
	i := slices.IndexFunc(top, func(m member) bool { return m.Key == "mcpServers" })
	if i < 0 {
		top = append(top, member{Key: "mcpServers"})
		i = len(top) - 1
	}
	top[i].Value = encodeObject(servers)
	return indent(encodeObject(top))
}
