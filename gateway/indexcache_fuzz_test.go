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
	if refs, _, err := decodeRefs(b); err != nil || refs.len() != 2 || refs.tools != 1 ||
		refs.ref(0) != (cachedRef{server: "a", kind: kindPrompt, name: "x"}) ||
		refs.ref(1) != (cachedRef{server: "b", kind: kindTool, name: "y", description: "d"}) {
		f.Fatalf("the seed reads as %+v, %v", refs, err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		refs, _, err := decodeRefs(data)
		if err != nil {
			return
		}
		if refs.len() > len(data) {
			t.Fatalf("%d places from %d bytes", refs.len(), len(data))
		}
		for d := range refs.len() {
			refs.ref(d) // every place decodeRefs accepted reads
		}
	})
}
