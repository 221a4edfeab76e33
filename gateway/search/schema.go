package search

import (
	"sort"
	"strings"
)

// ParamsOf reads the top-level parameters of a tool's input schema, as a
// client decodes it (a map[string]any), in name order. A parameter's
// description carries its enum values, and those of its items for an array
// ("One of: get_workflow, get_workflow_run."): tools that bundle several
// actions behind one parameter (GitHub's actions_get, issue_write) name
// the actions only there. Required marks the parameters the schema's
// "required" lists. Anything else yields no parameters.
func ParamsOf(schema any) []Param {
	s, ok := schema.(map[string]any)
	if !ok {
		return nil
	}
	props, ok := s["properties"].(map[string]any)
	if !ok {
		return nil
	}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	required := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
	out := make([]Param, 0, len(names))
	for _, name := range names {
		p := Param{Name: name, Required: required[name]}
		if pm, ok := props[name].(map[string]any); ok {
			p.Description, _ = pm["description"].(string)
			vals := enumOf(pm)
			if items, ok := pm["items"].(map[string]any); ok {
				vals = append(vals, enumOf(items)...)
			}
			if len(vals) > 0 {
				p.Description += " One of: " + strings.Join(vals, ", ") + "."
			}
		}
		out = append(out, p)
	}
	return out
}

// enumOf returns the string values of a schema's enum.
func enumOf(schema map[string]any) []string {
	enum, _ := schema["enum"].([]any)
	var vals []string
	for _, v := range enum {
		if s, ok := v.(string); ok {
			vals = append(vals, s)
		}
	}
	return vals
}
