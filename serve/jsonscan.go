package serve

import (
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/internal/jsonscan"
)

// Reading a host's line without decoding it. A tools/call line nests the
// call's arguments three objects deep (the envelope, its params, the
// gateway's input); decoding each level into a map or a struct scanned
// and copied everything below it again, some 60 allocations for a short
// call. envelope, readParams and readInput find the members in place
// instead (jsonscan.Members), reading what decoding into a
// map[string]json.RawMessage read: the same keys, the last of a key given
// twice, the same value bytes.

// stringValue reads raw as a JSON string, reporting false for anything
// else (null included).
func stringValue(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	return jsonscan.Unquote(raw)
}

// readInput reads the gateway's input from args in place when it is of
// the plain shape a model sends, reporting false (in untouched) for any
// other, which json.Unmarshal then decodes: members named exactly as
// Input's fields, each string field a string, arguments an object. Of
// such input, it reads what encoding/json does; of any other (a name in
// another case, which encoding/json would match too, null, a number, a
// member it ignores) it leaves the reading to encoding/json
// (FuzzReadInput). args is valid JSON.
func readInput(args []byte, in *gateway.Input) bool {
	if args[0] != '{' {
		return false
	}
	var out gateway.Input
	for key, value := range jsonscan.Members(args) {
		var field *string
		switch string(key) {
		case "action":
			field = &out.Action
		case "server":
			field = &out.Server
		case "tool":
			field = &out.Tool
		case "query":
			field = &out.Query
		case "uri":
			field = &out.URI
		case "prompt":
			field = &out.Prompt
		case "arguments":
			if value[0] != '{' {
				return false
			}
			out.Arguments = value
			continue
		default:
			return false
		}
		s, ok := stringValue(value)
		if !ok {
			return false
		}
		*field = s
	}
	*in = out
	return true
}
