package gateway

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// render turns server content into what the model sees: all text in one
// untrusted block (bounded together), small images passed through after
// it, and every other kind of content described in a line of its own, so
// nothing is dropped silently.
func (g *Gateway) render(source string, content []mcp.Content, structured any) *mcp.CallToolResult {
	var text strings.Builder
	var images []mcp.Content
	add := func(s string) {
		if text.Len() > 0 && !strings.HasSuffix(text.String(), "\n") {
			text.WriteByte('\n')
		}
		text.WriteString(s)
	}
	budget := attachBudget{lim: g.lim}
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			add(c.Text)
		case *mcp.ImageContent:
			switch {
			case budget.take(len(c.Data)):
				images = append(images, c)
				add(fmt.Sprintf("[image %s, %d bytes: attached after this block]", safeMIME(c.MIMEType), len(c.Data)))
			case g.lim.MaxImageBytes <= 0 || len(c.Data) > g.lim.MaxImageBytes:
				add(fmt.Sprintf("[image %s, %d bytes: too large to show]", safeMIME(c.MIMEType), len(c.Data)))
			default:
				add(fmt.Sprintf("[image %s, %d bytes: not shown: this answer already carries %d bytes of images]", safeMIME(c.MIMEType), len(c.Data), budget.used))
			}
		case *mcp.AudioContent:
			add(fmt.Sprintf("[audio %s, %d bytes: not shown]", safeMIME(c.MIMEType), len(c.Data)))
		case *mcp.ResourceLink:
			add(fmt.Sprintf("[resource link %s (%s); read it with {\"action\":\"read\",\"uri\":...}]", c.URI, c.Name))
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil {
				if r.Text != "" {
					add(r.Text)
				} else {
					add(fmt.Sprintf("[resource %s, %s, %d bytes of binary data: not shown]", r.URI, safeMIME(r.MIMEType), len(r.Blob)))
				}
			}
		default:
			add("[content of an unknown kind: not shown]")
		}
	}
	if text.Len() == 0 && structured != nil {
		if b, err := json.Marshal(structured); err == nil {
			add(string(b))
		}
	}
	if text.Len() == 0 {
		add("(no content)")
	}
	out := []mcp.Content{&mcp.TextContent{Text: untrusted(source, text.String(), g.lim)}}
	return &mcp.CallToolResult{Content: append(out, images...)}
}

func safeMIME(m string) string {
	if m == "" || len(m) > 80 || strings.ContainsAny(m, " \n\r\t\"<>") {
		return "of unknown type"
	}
	return m
}
