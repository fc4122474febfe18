// Code generated from bindings/go/handles_test.go by go generate (internal/shared/gen); DO NOT EDIT.

package sicore

import (
	"testing"
	"unsafe"
)

// TestHandlesAreNeverAddresses: whatever the sequence has reached, a
// 64-bit handle lies above every user-space address (at most 57 bits,
// with five-level paging), so cgo's pointer check never takes the
// user_data of a callback table for a Go pointer. The editions'
// TestHandlesPastTheGoHeap registers across the value that once did.
func TestHandlesAreNeverAddresses(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("32-bit: a handle is its slot, a small integer")
	}
	handles.mu.Lock()
	handles.seq = max(handles.seq, 0xbd)
	handles.mu.Unlock()
	for i := 0; i < 300; i++ {
		h := newHandle(&registration{})
		h.delete()
		if uint64(h) < 1<<57 {
			t.Fatalf("handle %#x could be an address", uint64(h))
		}
	}
}
