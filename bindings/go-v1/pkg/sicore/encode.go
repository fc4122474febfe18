package sicore

import (
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

// encodeAllocationRequest encodes an si.AllocationRequest into buf (which
// it may grow) or a new slice.
func encodeAllocationRequest(buf []byte, m *si.AllocationRequest) ([]byte, error) {
	if b, err := appendAllocationRequest(buf[:0], m); err == nil {
		return b, nil
	}
	return proto.Marshal(m)
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
	for i, a := range m.Allocations {
		var start int
		b, start = openField(b, 4)
		if b, err = appendAllocation(b, a); err != nil {
			return b, err
		}
		b = closeField(b, start)
		if i == 0 {
			b = roomForAlike(b, len(b)-start+2, len(m.Allocations)-1)
		}
	}
	return b, nil
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
