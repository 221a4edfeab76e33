package gateway

import "testing"

// FuzzDecodeRefs: whatever a kept index's file holds, reading its places
// returns them or an error, never panics, and never makes more places
// than there are bytes.
func FuzzDecodeRefs(f *testing.F) {
	// Two servers of one entry each: a prompt "x", and a tool "y"
	// described "d".
	b := append([]byte(cachedIndexMagic), 2, 1, 'a', 1, 1, 'b', 1, 2, 1, 'x', 1, 1, 'y', 1, 'd')
	f.Add(b)
	if refs, _, err := decodeRefs(b); err != nil || len(refs) != 2 || refs[0].kind != kindPrompt ||
		refs[1].name != "y" || refs[1].kind != kindTool || string(refs[1].description) != "d" {
		f.Fatalf("the seed reads as %+v, %v", refs, err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		refs, _, err := decodeRefs(data)
		if err == nil && len(refs) > len(data) {
			t.Fatalf("%d places from %d bytes", len(refs), len(data))
		}
	})
}
