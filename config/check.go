package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/mcpgate/mcpgate"
)

// Problem is one thing wrong with a config file, as [Check] finds it.
type Problem struct {
	// Server is the ID (the key in mcpServers) of the invalid entry;
	// empty for a problem with the file as a whole.
	Server string
	// Line and Column locate malformed JSON (1-based); zero otherwise.
	Line, Column int
	// Err is what [Load] would report, an [*mcpgate.Error].
	Err error
}

// Check reads the config file at path as [Load] does, but instead of
// stopping at the first invalid entry it reports every one, each naming
// its server, so a person can fix them all at once. A file that does not
// parse is one Problem with its line and column. A missing file has none.
func Check(path string) ([]Problem, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	_, loadErr := parse(path, data)
	if loadErr == nil {
		return nil, nil
	}
	data = trimBOM(data)
	if err := checkSyntax(data); err != nil {
		p := Problem{Err: invalidf("config %s:%v", path, err)}
		var se *json.SyntaxError
		if errors.As(json.Unmarshal(data, new(json.RawMessage)), &se) {
			p.Line, p.Column = lineCol(data, se.Offset)
		}
		return []Problem{p}, nil
	}
	top, err := decodeObject(data)
	if err != nil {
		return []Problem{{Err: invalidf("config %s: top level: %v", path, err)}}, nil
	}
	raw, _ := lookup(top, "mcpServers")
	servers, err := decodeObject(raw)
	if err != nil {
		return []Problem{{Err: invalidf("config %s: mcpServers: %v (keyed by server ID)", path, err)}}, nil
	}
	var problems []Problem
	for _, m := range servers {
		if _, err := decodeEntry(m.Key, m.Value); err != nil {
			problems = append(problems, Problem{Server: m.Key, Err: mcpgate.Errorf(mcpgate.CategoryOf(err), "config %s: %w", path, err)})
		}
	}
	if len(problems) == 0 {
		problems = append(problems, Problem{Err: loadErr}) // never, while Check follows parse
	}
	return problems, nil
}
