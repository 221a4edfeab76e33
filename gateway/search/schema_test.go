package search

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParamsOf(t *testing.T) {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"repo":   map[string]any{"type": "string", "description": "Repository name"},
			"method": map[string]any{"type": "string", "description": "The method to execute", "enum": []any{"get_workflow", "get_workflow_run"}},
			"states": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []any{"open", "closed"}}},
			"odd":    "not a schema",
		},
		"required": []any{"repo", "missing", 7},
	}
	want := []Param{
		{Name: "method", Description: "The method to execute One of: get_workflow, get_workflow_run."},
		{Name: "odd"},
		{Name: "repo", Description: "Repository name", Required: true},
		{Name: "states", Description: " One of: open, closed."},
	}
	if got := ParamsOf(schema); !cmp.Equal(got, want) {
		t.Errorf("ParamsOf = %+v, want %+v", got, want)
	}
	for _, bad := range []any{nil, "x", map[string]any{}, map[string]any{"properties": 3}} {
		if got := ParamsOf(bad); got != nil {
			t.Errorf("ParamsOf(%v) = %v, want nil", bad, got)
		}
	}
}
