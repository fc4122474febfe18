package sicore

import (
	"errors"
	"sync"
	"unicode/utf8"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// A hand-written encoder for si.AllocationRequest, the request an RM sends
// per pod. proto.Marshal sizes every message before writing it and sorts
// map keys through reflection in deterministic mode. This encoder writes
// the same bytes as proto.Marshal in deterministic mode (fields by number,
// map entries in key order) in one pass: a nested
// message gets a one-byte length, widened in place in the rare case it
// is 128 bytes or more. What it does not expect (a nil element in a
// repeated field or a map, invalid UTF-8, both of which proto.Marshal
// reports, or unknown fields kept from a decode) sends the request
// through proto.Marshal instead. encode_test.go compares the two on
// random requests.

// errFallback stops the encoder; the request then goes through proto.Marshal.
var errFallback = errors.New("not for the fast encoder")

// encodeAllocationRequest encodes an si.AllocationRequest into buf (which
// it may grow) or a new slice.
func encodeAllocationRequest(buf []byte, m *si.AllocationRequest) ([]byte, error) {
	if b, err := appendAllocationRequest(buf[:0], m); err == nil {
		return b, nil
	}
	return proto.Marshal(m)
}

// requestBuffers recycles the buffers UpdateAllocation encodes into: the
// library decodes a request before sicore_update_allocation returns and
// keeps no reference to it, so the buffer is free again right after. A
// request of a few thousand pods is hundreds of KiB, which a fresh slice
// would take from the OS (page faults) and leave to the collector.
var requestBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledRequest is the largest buffer kept for reuse.
const maxPooledRequest = 4 << 20

// openField starts a nested message field: its tag and a one-byte length to be
// set by closeField.
func openField(b []byte, num protowire.Number) ([]byte, int) {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = append(b, 0)
	return b, len(b)
}

// closeField sets the length of the message opened at start (the offset after
// its length byte), moving its bytes when the length needs more than one.
func closeField(b []byte, start int) []byte {
	n := len(b) - start
	if n < 0x80 {
		b[start-1] = byte(n)
		return b
	}
	extra := protowire.SizeVarint(uint64(n)) - 1
	for i := 0; i < extra; i++ {
		b = append(b, 0)
	}
	copy(b[start+extra:], b[start:start+n])
	protowire.AppendVarint(b[:start-1], uint64(n))
	return b
}

func appendString(b []byte, num protowire.Number, s string) ([]byte, error) {
	if s == "" {
		return b, nil
	}
	return appendStringAlways(b, num, s)
}

// appendStringAlways writes s even when empty, as proto does for the key
// and value of a map entry.
func appendStringAlways(b []byte, num protowire.Number, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return b, errFallback
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s), nil
}

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// unknown reports whether m carries unknown fields kept from a decode,
// which only proto.Marshal writes back.
func unknown(m proto.Message) bool {
	return len(m.ProtoReflect().GetUnknown()) > 0
}

func appendAllocationRequest(b []byte, m *si.AllocationRequest) ([]byte, error) {
	if unknown(m) {
		return b, errFallback
	}
	var err error
	if r := m.Releases; r != nil {
		var start int
		b, start = openField(b, 2)
		if b, err = appendReleases(b, r); err != nil {
			return b, err
		}
		b = closeField(b, start)
	}
	if b, err = appendString(b, 3, m.RmID); err != nil {
		return b, err
	}
	for _, a := range m.Allocations {
		var start int
		b, start = openField(b, 4)
		if b, err = appendAllocation(b, a); err != nil {
			return b, err
		}
		b = closeField(b, start)
	}
	return b, nil
}

// sortedKeys returns the keys of a small map in order (proto.Marshal's
// deterministic order), without allocating for up to eight keys.
func sortedKeys[V any](m map[string]V, buf *[8]string) []string {
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ { // insertion sort: these maps are tiny
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

func appendBool(b []byte, num protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	return appendVarint(b, num, 1)
}

func appendAllocation(b []byte, a *si.Allocation) ([]byte, error) {
	if a == nil || unknown(a) {
		return b, errFallback
	}
	var err error
	if b, err = appendString(b, 1, a.AllocationKey); err != nil {
		return b, err
	}
	if len(a.AllocationTags) > 0 {
		var buf [8]string
		for _, k := range sortedKeys(a.AllocationTags, &buf) {
			var start int
			b, start = openField(b, 2)
			if b, err = appendStringAlways(b, 1, k); err != nil {
				return b, err
			}
			if b, err = appendStringAlways(b, 2, a.AllocationTags[k]); err != nil {
				return b, err
			}
			b = closeField(b, start)
		}
	}
	if a.ResourcePerAlloc != nil {
		var start int
		b, start = openField(b, 5)
		if b, err = appendResource(b, a.ResourcePerAlloc); err != nil {
			return b, err
		}
		b = closeField(b, start)
	}
	// int32 is sign-extended to 64 bits on the wire.
	b = appendVarint(b, 6, uint64(int64(a.Priority)))
	for _, f := range [4]struct {
		num protowire.Number
		s   string
	}{{8, a.NodeID}, {9, a.ApplicationID}, {10, a.PartitionName}, {11, a.TaskGroupName}} {
		if b, err = appendString(b, f.num, f.s); err != nil {
			return b, err
		}
	}
	b = appendBool(b, 12, a.Placeholder)
	b = appendBool(b, 14, a.Originator)
	if p := a.PreemptionPolicy; p != nil {
		if unknown(p) {
			return b, errFallback
		}
		var start int
		b, start = openField(b, 15)
		b = appendBool(b, 1, p.AllowPreemptSelf)
		b = appendBool(b, 2, p.AllowPreemptOther)
		b = closeField(b, start)
	}
	return b, nil
}

func appendResource(b []byte, r *si.Resource) ([]byte, error) {
	if unknown(r) {
		return b, errFallback
	}
	var buf [8]string
	var err error
	for _, k := range sortedKeys(r.Resources, &buf) {
		q := r.Resources[k]
		if q == nil || unknown(q) {
			return b, errFallback
		}
		var start int
		b, start = openField(b, 1)
		if b, err = appendStringAlways(b, 1, k); err != nil {
			return b, err
		}
		var qstart int
		b, qstart = openField(b, 2)
		b = appendVarint(b, 1, uint64(q.Value))
		b = closeField(b, qstart)
		b = closeField(b, start)
	}
	return b, nil
}

func appendReleases(b []byte, r *si.AllocationReleasesRequest) ([]byte, error) {
	if unknown(r) {
		return b, errFallback
	}
	var err error
	for _, a := range r.AllocationsToRelease {
		if a == nil || unknown(a) {
			return b, errFallback
		}
		var start int
		b, start = openField(b, 1)
		if b, err = appendString(b, 1, a.PartitionName); err != nil {
			return b, err
		}
		if b, err = appendString(b, 2, a.ApplicationID); err != nil {
			return b, err
		}
		b = appendVarint(b, 4, uint64(int64(a.TerminationType)))
		if b, err = appendString(b, 5, a.Message); err != nil {
			return b, err
		}
		if b, err = appendString(b, 6, a.AllocationKey); err != nil {
			return b, err
		}
		b = closeField(b, start)
	}
	return b, nil
}
