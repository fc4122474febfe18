package sicore

import (
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"google.golang.org/protobuf/encoding/protowire"
)

// Hand-written decoders for the messages the library sends per
// allocation: si.AllocationResponse (new allocations and released ones,
// from the delivery thread) and si.PredicatesArgs (from the core thread,
// once per node tried when the RM has a Predicates callback).
//
// proto.Unmarshal allocates every string, map entry and sub-message
// separately. These decoders produce the same si values with fewer
// allocations:
//
//   - all string fields of one message (one Allocation, one release, one
//     PredicatesArgs) are substrings of a single copy of that message's
//     bytes, so a kept string holds on to no more than its own message;
//   - an Allocation, its Resource, its first two Quantities and its
//     PreemptionPolicy are one allocation (allocationBox);
//   - PredicatesArgs has a straight-line reader for the exact layout the
//     library writes (quickPredicatesArgs) before the general one.
//
// They only take the shape the library writes: the known fields with
// their wire types, valid UTF-8, each sub-message at most once. Anything
// else (unknown fields, which proto.Unmarshal keeps; a repeated
// sub-message, which it merges; corrupt bytes) makes them give up and the
// message goes through proto.Unmarshal, so the result is always what
// proto.Unmarshal returns; decode_test.go checks that on random, mutated
// and truncated messages.
//
// This file has the messages whose fields differ between the editions;
// decode_common.go has the fallback, PredicatesArgs, Resource and
// Quantity, which are the same in both.

// decodeAllocationResponse decodes an si.AllocationResponse.
func decodeAllocationResponse(b []byte) (*si.AllocationResponse, error) {
	return decodeFast(b, fastAllocationResponse)
}

// allocationBox holds an Allocation and the small messages it points to,
// so that decoding one allocation costs one allocation for them.
type allocationBox struct {
	alloc    si.Allocation
	resource si.Resource
	quantity [2]si.Quantity
	policy   si.PreemptionPolicy
}

// allocText is how many bytes of an Allocation message are copied into
// its box for its strings (a pod with a short key, node and application
// fits); a longer message gets a string of its own.
const allocText = 128

// allocationTextBox is an allocationBox with the bytes of its strings.
type allocationTextBox struct {
	allocationBox
	text [allocText]byte
}

// oneAllocation is an AllocationResponse of one new allocation, which the
// library sends for each decision when the RM has a Predicates callback
// (the RM must hold it before the next Predicates): the response, its
// slice, the allocation and the bytes of its strings are one heap object.
// The text comes in three sizes, so that a short message (the benchmark's
// pods, ~80 bytes) takes a smaller size class and a long one (a pod UID
// key and a cloud node name, ~160 bytes) still one object.
type oneAllocation struct {
	resp  si.AllocationResponse
	new   [1]*si.Allocation
	alloc allocationBox
}

type oneAllocationS struct {
	oneAllocation
	text [96]byte
}

type oneAllocationM struct {
	oneAllocation
	text [192]byte
}

type oneAllocationL struct {
	oneAllocation
	text [320]byte
}

// maxOneText is the longest allocation read into one object.
const maxOneText = 320

// decodeOne reads the allocation message first into one object sized for
// it; first is at most maxOneText bytes.
func decodeOne(first []byte) (*si.AllocationResponse, bool) {
	var one *oneAllocation
	var buf []byte
	switch {
	case len(first) <= 96:
		o := new(oneAllocationS)
		one, buf = &o.oneAllocation, o.text[:]
	case len(first) <= 192:
		o := new(oneAllocationM)
		one, buf = &o.oneAllocation, o.text[:]
	default:
		o := new(oneAllocationL)
		one, buf = &o.oneAllocation, o.text[:]
	}
	t := text{s: inlineString(buf, first), ascii: isASCII(first)}
	if !allocationInto(&one.alloc, &t, first) {
		return nil, false
	}
	one.new[0] = &one.alloc.alloc
	one.resp.New = one.new[:]
	return &one.resp, true
}

// fastAllocationResponse takes new (1) and released (2); anything else,
// rejectedAllocations included (rare), goes to proto.Unmarshal.
func fastAllocationResponse(b []byte) (*si.AllocationResponse, bool) {
	// The per-decision message (one `new`, nothing else) is read in one
	// pass: no walk to count its fields first.
	if first, ok := onlyNew(b); ok && len(first) <= maxOneText {
		return decodeOne(first)
	}
	// A batch: count first, so each slice is allocated once (the walk
	// reads only the fields' headers).
	var nNew, nReleased int
	r := reader{b: b}
	for {
		var f field
		ok, bad := r.next(&f)
		if bad || (ok && f.typ != protowire.BytesType) {
			return nil, false
		}
		if !ok {
			break
		}
		switch f.num {
		case 1:
			nNew++
		case 2:
			nReleased++
		default:
			return nil, false
		}
	}
	m := new(si.AllocationResponse)
	if nNew > 0 {
		m.New = make([]*si.Allocation, 0, nNew)
	}
	if nReleased > 0 {
		m.Released = make([]*si.AllocationRelease, 0, nReleased)
	}
	r = reader{b: b}
	for {
		var f field
		ok, _ := r.next(&f)
		if !ok {
			return m, true
		}
		if f.num == 1 {
			a, ok := fastAllocation(f.data)
			if !ok {
				return nil, false
			}
			m.New = append(m.New, a)
			continue
		}
		rel, ok := fastRelease(f.data)
		if !ok {
			return nil, false
		}
		m.Released = append(m.Released, rel)
	}
}

// onlyNew returns the payload of b when b is exactly one `new` field (tag
// 0x0a, its length, its payload to the end), as the library sends each
// decision to an RM with a Predicates callback.
func onlyNew(b []byte) ([]byte, bool) {
	if len(b) < 2 || b[0] != 0x0a {
		return nil, false
	}
	l, n := uint64(b[1]), 1
	if l >= 0x80 {
		if l, n = protowire.ConsumeVarint(b[1:]); n < 0 {
			return nil, false
		}
	}
	if l != uint64(len(b)-1-n) {
		return nil, false
	}
	return b[1+n:], true
}

func fastAllocation(b []byte) (*si.Allocation, bool) {
	if len(b) <= allocText {
		box := new(allocationTextBox)
		t := text{s: inlineString(box.text[:], b), ascii: isASCII(b)}
		if !allocationInto(&box.allocationBox, &t, b) {
			return nil, false
		}
		return &box.alloc, true
	}
	box := new(allocationBox)
	t := newText(b) // every string field is a substring of this copy
	if !allocationInto(box, &t, b) {
		return nil, false
	}
	return &box.alloc, true
}

// allocationInto reads the Allocation message b into box; every string
// field is a substring of t, the copy of b.
func allocationInto(box *allocationBox, t *text, b []byte) bool {
	a := &box.alloc
	r := reader{b: b}
	quantities := 0
	for {
		var f field
		// The common field, length-delimited with a one-byte tag and
		// length, read here rather than through a call.
		if p := r.pos; p+1 < len(b) && b[p] < 0x80 && b[p]&7 == 2 && b[p+1] < 0x80 && p+2+int(b[p+1]) <= len(b) {
			l := int(b[p+1])
			f.num, f.typ, f.offset, f.data = protowire.Number(b[p]>>3), protowire.BytesType, p+2, b[p+2:p+2+l]
			r.pos = p + 2 + l
		} else if ok, bad := r.next(&f); bad {
			return false
		} else if !ok {
			return true
		}
		switch f.num {
		case 1, 8, 9, 10, 11:
			v, ok := f.str(t)
			if !ok {
				return false
			}
			switch f.num {
			case 1:
				a.AllocationKey = v
			case 8:
				a.NodeID = v
			case 9:
				a.ApplicationID = v
			case 10:
				a.PartitionName = v
			case 11:
				a.TaskGroupName = v
			}
		case 2: // allocationTags entry
			if f.typ != protowire.BytesType {
				return false
			}
			k, v, ok := stringEntry(t, f)
			if !ok {
				return false
			}
			if a.AllocationTags == nil {
				a.AllocationTags = make(map[string]string)
			}
			a.AllocationTags[k] = v
		case 5: // resourcePerAlloc; a second one would be merged by proto
			if f.typ != protowire.BytesType || a.ResourcePerAlloc != nil {
				return false
			}
			if !resourceInto(&box.resource, t, f, &box.quantity, &quantities) {
				return false
			}
			a.ResourcePerAlloc = &box.resource
		case 6, 12, 14:
			if f.typ != protowire.VarintType {
				return false
			}
			switch f.num {
			case 6:
				a.Priority = int32(f.value)
			case 12:
				a.Placeholder = f.value != 0
			case 14:
				a.Originator = f.value != 0
			}
		case 15: // preemptionPolicy; a second one would be merged by proto
			if f.typ != protowire.BytesType || a.PreemptionPolicy != nil {
				return false
			}
			if !policyInto(&box.policy, f.data) {
				return false
			}
			a.PreemptionPolicy = &box.policy
		default:
			return false
		}
	}
}

// policyInto reads an si.PreemptionPolicy (bools 1 and 2).
func policyInto(p *si.PreemptionPolicy, b []byte) bool {
	r := reader{b: b}
	for {
		var f field
		more, bad := r.next(&f)
		if bad {
			return false
		}
		if !more {
			return true
		}
		if f.typ != protowire.VarintType {
			return false
		}
		switch f.num {
		case 1:
			p.AllowPreemptSelf = f.value != 0
		case 2:
			p.AllowPreemptOther = f.value != 0
		default:
			return false
		}
	}
}

// fastRelease reads an si.AllocationRelease: strings 1, 2, 5 and 6, the
// termination type 4.
func fastRelease(b []byte) (*si.AllocationRelease, bool) {
	m := new(si.AllocationRelease)
	t := newText(b)
	r := reader{b: b}
	for {
		var f field
		more, bad := r.next(&f)
		if bad {
			return nil, false
		}
		if !more {
			return m, true
		}
		var ok bool
		switch f.num {
		case 1:
			m.PartitionName, ok = f.str(&t)
		case 2:
			m.ApplicationID, ok = f.str(&t)
		case 4:
			m.TerminationType, ok = si.TerminationType(int32(f.value)), f.typ == protowire.VarintType
		case 5:
			m.Message, ok = f.str(&t)
		case 6:
			m.AllocationKey, ok = f.str(&t)
		}
		if !ok {
			return nil, false
		}
	}
}
