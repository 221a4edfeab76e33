package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzEnvelope holds envelope to the go-sdk's decoder: a line envelope
// decodes is one jsonrpc.DecodeMessage decodes as the same request, so
// the fast path never takes what the go-sdk would have refused.
func FuzzEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","_meta":{"progressToken":7}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"JSONRPC":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","ID":1,"Method":"ping"}`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":null}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"} trailing`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`,
		`{"jsonrpc":"2.0","id":1,"method":"t","params":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
		`{"jsonrpc":"2.0","id":1,"method":"t\u00e9\"\\","params":"x\"[{"}`,
		`{"jsonrpc":"2.0","method":"厜\b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		req := envelope(line)
		if req == nil {
			return
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			t.Fatalf("envelope took %q, which the go-sdk refuses: %v", line, err)
		}
		want, ok := msg.(*jsonrpc.Request)
		if !ok {
			t.Fatalf("envelope took %q as a request; the go-sdk reads %T", line, msg)
		}
		if want.Method != req.Method || want.ID != req.ID || !bytes.Equal(bytes.TrimSpace(want.Params), bytes.TrimSpace(req.Params)) {
			t.Fatalf("%q: envelope read %q %v %s, the go-sdk %q %v %s", line, req.Method, req.ID, req.Params, want.Method, want.ID, want.Params)
		}
	})
}

func TestTooDeep(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		deep bool
	}{
		{strings.Repeat("[", 3) + strings.Repeat("]", 3), false},
		{strings.Repeat("[", 4) + strings.Repeat("]", 4), true},
		{`{"a":"[[[[[[["}`, false},
		{`{"a":"\"[[[[[[["}`, false},
		{`[[{"a":"\\"}]]`, false},
		{`[[{"a":"\\"}]][[[[`, true},
	} {
		if got := tooDeep([]byte(tc.line), 3); got != tc.deep {
			t.Errorf("%s: tooDeep %v, want %v", tc.line, got, tc.deep)
		}
	}
}

// The fast path's responses are the bytes the go-sdk writes for the same
// result or error: an empty content as [], HTML characters as the
// result's own encoder left them.
func TestFastPathRepliesAsTheGoSDK(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id  any
		res *mcp.CallToolResult
		err error
	}{
		{float64(7), &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "<untrusted-content nonce=\"x\"> & </untrusted-content>"}}, IsError: true}, nil},
		{"a<b>", &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"t":21}`)}, nil},
		{"c", nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "x"`}},
		{float64(8), nil, context.Canceled},
	} {
		id, _ := jsonrpc.MakeID(tc.id)
		var got bytes.Buffer
		p := &fastPath{f: &Front{opts: Options{Logger: slog.New(slog.DiscardHandler)}}, out: &got}
		p.reply(id, tc.res, tc.err, false)
		want := &jsonrpc.Response{ID: id, Error: tc.err}
		if tc.res != nil {
			r := *tc.res
			if r.Content == nil {
				r.Content = []mcp.Content{}
			}
			want.Result, _ = json.Marshal(&r)
		}
		b, err := jsonrpc.EncodeMessage(want)
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != string(b)+"\n" {
			t.Errorf("fast path:\n %s\ngo-sdk:\n %s", got.String(), b)
		}
	}
}

// readParamsByDecoding is what readParams did with encoding/json's
// decoding into maps before it scanned: the reference FuzzReadParams
// holds it to.
func readParamsByDecoding(raw json.RawMessage) (*callParams, bool) {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil || m == nil {
		return nil, false
	}
	for _, k := range []string{"requestState", "inputResponses", "task"} {
		if _, ok := m[k]; ok {
			return nil, false
		}
	}
	p := &callParams{Arguments: m["arguments"]}
	if name := m["name"]; len(name) == 0 || name[0] != '"' || json.Unmarshal(name, &p.Name) != nil || p.Name == "" {
		return nil, false
	}
	var meta map[string]json.RawMessage
	if raw, ok := m["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return nil, false
	}
	_, p.versioned = meta[mcp.MetaKeyProtocolVersion]
	p.progressToken = meta["progressToken"]
	return p, true
}

// FuzzReadParams: on the params of any line envelope takes, readParams
// reads what decoding them into maps read, and leaves what it left.
func FuzzReadParams(f *testing.F) {
	for _, s := range []string{
		`{"name":"mcp","arguments":{"action":"call"}}`,
		`{"name":"x","_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
		`{"name":"x","_meta":null,"arguments":null}`,
		`{"name":"x","_meta":[1]}`,
		`{"name":"","arguments":{}}`,
		`{"name":5}`,
		`{"n\u0061me":"x","name":"y","task":{}}`,
		`{"name":"x\ud800","arguments":{"a":"}"}}`,
		`{"name":"x","requestState":null}`,
		`{"name":"x","_meta":{"progressToken":"a","progressToken":null}}`,
		`null`, `[]`, `"s"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		raw = bytes.TrimSpace(raw) // as envelope hands params on
		got, ok := readParams(raw)
		want, wantOK := readParamsByDecoding(raw)
		if ok != wantOK {
			t.Fatalf("%s: readParams %v, decoding %v", raw, ok, wantOK)
		}
		if ok && (got.Name != want.Name || !bytes.Equal(got.Arguments, want.Arguments) ||
			got.versioned != want.versioned || !bytes.Equal(got.progressToken, want.progressToken)) {
			t.Fatalf("%s: readParams %+v, decoding %+v", raw, got, want)
		}
	})
}

// FuzzReadInput: whatever gateway input readInput reads in place,
// json.Unmarshal reads the same.
func FuzzReadInput(f *testing.F) {
	for _, s := range []string{
		`{"action":"call","server":"demo","tool":"echo","arguments":{"text":"ping"}}`,
		`{"action":"search","query":"open a pull request","server":"gh"}`,
		`{"Action":"call","server":"demo"}`,
		`{"action":"call","action":"status"}`,
		`{"action":"call","arguments":null}`,
		`{"action":"call","arguments":[1]}`,
		`{"action":"call","limit":3}`,
		`{"action":"c\u0061ll","server":"d\u00e9mo","tool":"é"}`,
		`{"action":"call","tool":"\ud800"}`,
		`{"action":null}`,
		`{"\u0061ction":"call"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		if !json.Valid(args) {
			return
		}
		args = bytes.TrimSpace(args)
		var got gateway.Input
		if !readInput(args, &got) {
			if !reflect.DeepEqual(got, gateway.Input{}) {
				t.Fatalf("%s: readInput refused but changed the input: %+v", args, got)
			}
			return
		}
		var want gateway.Input
		if err := json.Unmarshal(args, &want); err != nil {
			t.Fatalf("%s: readInput read %+v, json.Unmarshal refuses: %v", args, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: readInput read %+v, json.Unmarshal %+v", args, got, want)
		}
	})
}

// TestTextResultEncoding: a text-only result written by hand
// (appendTextResult) is byte for byte what encoding/json writes of it, and
// every other result is left to encoding/json.
func TestTextResultEncoding(t *testing.T) {
	t.Parallel()
	impl := &mcp.Implementation{Name: "mcpgate <&>", Version: "1.2"}
	implJSON, err := json.Marshal(impl)
	if err != nil {
		t.Fatal(err)
	}
	p := &fastPath{f: &Front{impl: impl, implJSON: implJSON}}
	text := func(s ...string) []mcp.Content {
		var c []mcp.Content
		for _, s := range s {
			c = append(c, &mcp.TextContent{Text: s})
		}
		return c
	}
	taken := []*mcp.CallToolResult{
		{Content: []mcp.Content{}},
		{Content: text("pong")},
		{Content: text("<untrusted-content nonce=\"a1\">\n{\"a\":\"b\\u00e9\"} & \u2028 \x01 \xff caf\u00e9 \U0001F600\n</untrusted-content>", ""), IsError: true},
	}
	for _, r := range taken {
		for _, serverInfo := range []bool{false, true} {
			want := *r
			if serverInfo {
				want.Meta = mcp.Meta{mcp.MetaKeyServerInfo: p.f.impl}
			}
			var got, exp bytes.Buffer
			if !p.appendTextResult(&got, &want, serverInfo) {
				t.Fatalf("not taken: %+v", want)
			}
			if err := appendJSON(&exp, &want); err != nil {
				t.Fatal(err)
			}
			if got.String() != exp.String() {
				t.Errorf("serverInfo=%v:\nby hand  %s\nencoding %s", serverInfo, got.String(), exp.String())
			}
		}
	}
	for _, r := range []*mcp.CallToolResult{
		{Content: text("a"), StructuredContent: map[string]any{"a": 1}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "a", Annotations: &mcp.Annotations{Priority: 1}}}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "a", Meta: mcp.Meta{"k": "v"}}}},
		{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}},
		{Content: text("a"), Meta: mcp.Meta{"k": "v"}},
		{Content: text("a"), RequestState: "s"},
		{}, // a result asking for input: "content": null, as the go-sdk writes it while asking
	} {
		var got bytes.Buffer
		got.WriteString("x")
		if p.appendTextResult(&got, r, false) || got.String() != "x" {
			t.Errorf("taken or written: %+v (%q)", r, got.String())
		}
	}
}
