package sicore

import (
	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
	"github.com/golang/protobuf/proto"
	"google.golang.org/protobuf/encoding/protowire"
)

// A hand-written encoder for si.AllocationRequest, the request an RM sends
// per pod. golang/protobuf v1.2.0 marshals the Resource and tag maps
// through reflection, which made encoding the asks as costly as
// scheduling them. This encoder writes the same bytes as proto.Marshal in
// deterministic mode (map entries in key order) in one pass: a nested
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

func appendAllocationRequest(b []byte, m *si.AllocationRequest) ([]byte, error) {
	if len(m.XXX_unrecognized) > 0 {
		return b, errFallback
	}
	var err error
	for i, a := range m.Asks {
		var start int
		b, start = openField(b, 1)
		if b, err = appendAsk(b, a); err != nil {
			return b, err
		}
		b = closeField(b, start)
		if i == 0 {
			b = roomForAlike(b, len(b)-start+2, len(m.Asks)-1)
		}
	}
	if r := m.Releases; r != nil {
		var start int
		b, start = openField(b, 2)
		if b, err = appendReleases(b, r); err != nil {
			return b, err
		}
		b = closeField(b, start)
	}
	return appendString(b, 3, m.RmID)
}

func appendAsk(b []byte, a *si.AllocationAsk) ([]byte, error) {
	if a == nil || len(a.XXX_unrecognized) > 0 {
		return b, errFallback
	}
	var err error
	if b, err = appendString(b, 1, a.AllocationKey); err != nil {
		return b, err
	}
	if b, err = appendString(b, 2, a.ApplicationID); err != nil {
		return b, err
	}
	if b, err = appendString(b, 3, a.PartitionName); err != nil {
		return b, err
	}
	if a.ResourceAsk != nil {
		var start int
		b, start = openField(b, 4)
		if b, err = appendResource(b, a.ResourceAsk); err != nil {
			return b, err
		}
		b = closeField(b, start)
	}
	b = appendVarint(b, 5, uint64(int64(a.MaxAllocations)))
	if p := a.Priority; p != nil {
		if len(p.XXX_unrecognized) > 0 {
			return b, errFallback
		}
		var start int
		b, start = openField(b, 6)
		// A oneof member is written even when zero.
		switch v := p.Priority.(type) {
		case nil:
		case *si.Priority_PriorityValue:
			b = protowire.AppendTag(b, 1, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(int64(v.PriorityValue)))
		case *si.Priority_PriorityClassName:
			if b, err = appendStringAlways(b, 2, v.PriorityClassName); err != nil {
				return b, err
			}
		default:
			return b, errFallback
		}
		b = closeField(b, start)
	}
	b = appendVarint(b, 7, uint64(a.ExecutionTimeoutMilliSeconds))
	if len(a.Tags) > 0 {
		var buf [8]string
		for _, k := range sortedKeys(a.Tags, &buf) {
			var start int
			b, start = openField(b, 8)
			if b, err = appendStringAlways(b, 1, k); err != nil {
				return b, err
			}
			if b, err = appendStringAlways(b, 2, a.Tags[k]); err != nil {
				return b, err
			}
			b = closeField(b, start)
		}
	}
	if b, err = appendString(b, 9, a.TaskGroupName); err != nil {
		return b, err
	}
	if a.Placeholder {
		b = appendVarint(b, 10, 1)
	}
	return b, nil
}

func appendResource(b []byte, r *si.Resource) ([]byte, error) {
	if len(r.XXX_unrecognized) > 0 {
		return b, errFallback
	}
	var buf [8]string
	var err error
	for _, k := range sortedKeys(r.Resources, &buf) {
		q := r.Resources[k]
		if q == nil || len(q.XXX_unrecognized) > 0 {
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
	if len(r.XXX_unrecognized) > 0 {
		return b, errFallback
	}
	var err error
	for _, a := range r.AllocationsToRelease {
		if a == nil || len(a.XXX_unrecognized) > 0 {
			return b, errFallback
		}
		if b, err = appendRelease(b, 1, a.PartitionName, a.ApplicationID, a.UUID, int32(a.TerminationType), a.Message); err != nil {
			return b, err
		}
	}
	for _, a := range r.AllocationAsksToRelease {
		if a == nil || len(a.XXX_unrecognized) > 0 {
			return b, errFallback
		}
		if b, err = appendRelease(b, 2, a.PartitionName, a.ApplicationID, a.Allocationkey, int32(a.TerminationType), a.Message); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendRelease writes an AllocationRelease or an AllocationAskRelease:
// the two have the same layout (strings 1, 2, 3 and 5, the termination
// type 4).
func appendRelease(b []byte, num protowire.Number, partition, app, key string, termination int32, message string) ([]byte, error) {
	var start int
	b, start = openField(b, num)
	var err error
	for i, s := range [3]string{partition, app, key} {
		if b, err = appendString(b, protowire.Number(i+1), s); err != nil {
			return b, err
		}
	}
	b = appendVarint(b, 4, uint64(int64(termination)))
	if b, err = appendString(b, 5, message); err != nil {
		return b, err
	}
	return closeField(b, start), nil
}
