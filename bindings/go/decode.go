package sicore

import (
	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
	"google.golang.org/protobuf/encoding/protowire"
)

// Hand-written decoders for the messages the library sends per allocation:
// si.AllocationResponse (new allocations, from the delivery thread),
// si.PredicatesArgs and si.ReSyncSchedulerCacheArgs (from the core thread,
// once per decision when the RM has a Predicates callback).
//
// golang/protobuf v1.2.0, which the upstream si package is generated for,
// decodes maps through reflection and allocates every string, Quantity and
// Priority separately; that was most of the delivery thread's time and
// most of the garbage. These decoders produce the same upstream si values
// with fewer allocations:
//
//   - all string fields of one message (one Allocation, one PredicatesArgs,
//     one AssumedAllocation) are substrings of a single copy of that
//     message's bytes, so a kept string holds on to no more than its own
//     message;
//   - an Allocation, its Resource, its first two Quantities and its
//     Priority are one allocation (allocationBox), and so are a ReSync
//     message, its slice and its one assumed allocation (resyncBox);
//   - the two messages of the core thread have a straight-line reader for
//     the exact layout the library writes (quickPredicatesArgs,
//     quickReSyncArgs) before the general one.
//
// They only take the shape the library writes: the known fields with
// their wire types, valid UTF-8, each sub-message at most once. Anything
// else (unknown fields, a repeated sub-message that proto would merge,
// corrupt bytes) makes them give up and the message goes through
// proto.Unmarshal, so the result is always what proto.Unmarshal returns;
// decode_test.go checks that on random, mutated and truncated messages.
//
// This file has the messages whose fields differ between the editions;
// decode_common.go has the fallback, PredicatesArgs, Resource and
// Quantity, which are the same in both.

// decodeAllocationResponse decodes an si.AllocationResponse.
func decodeAllocationResponse(b []byte) (*si.AllocationResponse, error) {
	return decodeFast(b, fastAllocationResponse)
}

// decodeReSyncSchedulerCacheArgs decodes an si.ReSyncSchedulerCacheArgs.
func decodeReSyncSchedulerCacheArgs(b []byte) (*si.ReSyncSchedulerCacheArgs, error) {
	return decodeFast(b, fastReSyncArgs)
}

// allocationBox holds an Allocation and the small messages it points to,
// so that decoding one allocation costs one allocation for them.
type allocationBox struct {
	alloc    si.Allocation
	resource si.Resource
	quantity [2]si.Quantity
	priority si.Priority
	value    si.Priority_PriorityValue
}

func fastAllocationResponse(b []byte) (*si.AllocationResponse, bool) {
	// Count the allocations first, so the slice is allocated once.
	n := 0
	r := reader{b: b}
	for {
		var f field
		ok, bad := r.next(&f)
		if bad || (ok && (f.num != 1 || f.typ != protowire.BytesType)) {
			return nil, false
		}
		if !ok {
			break
		}
		n++
	}
	m := new(si.AllocationResponse)
	if n == 0 {
		return m, true
	}
	m.New = make([]*si.Allocation, 0, n)
	r = reader{b: b}
	for {
		var f field
		ok, _ := r.next(&f)
		if !ok {
			break
		}
		a, ok := fastAllocation(f.data)
		if !ok {
			return nil, false
		}
		m.New = append(m.New, a)
	}
	return m, true
}

func fastAllocation(b []byte) (*si.Allocation, bool) {
	box := new(allocationBox)
	a := &box.alloc
	t := newText(b) // every string field is a substring of this copy
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
			return nil, false
		} else if !ok {
			return a, true
		}
		switch f.num {
		case 1, 3, 7, 8, 9, 10, 11:
			v, ok := f.str(&t)
			if !ok {
				return nil, false
			}
			switch f.num {
			case 1:
				a.AllocationKey = v
			case 3:
				a.UUID = v
			case 7:
				a.QueueName = v
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
				return nil, false
			}
			k, v, ok := stringEntry(&t, f)
			if !ok {
				return nil, false
			}
			if a.AllocationTags == nil {
				a.AllocationTags = make(map[string]string)
			}
			a.AllocationTags[k] = v
		case 5: // resourcePerAlloc; a second one would be merged by proto
			if f.typ != protowire.BytesType || a.ResourcePerAlloc != nil {
				return nil, false
			}
			if !resourceInto(&box.resource, &t, f, &box.quantity, &quantities) {
				return nil, false
			}
			a.ResourcePerAlloc = &box.resource
		case 6: // priority; a second one would be merged by proto
			if f.typ != protowire.BytesType || a.Priority != nil {
				return nil, false
			}
			if !priorityInto(&box.priority, &box.value, &t, f) {
				return nil, false
			}
			a.Priority = &box.priority
		case 12:
			if f.typ != protowire.VarintType {
				return nil, false
			}
			a.Placeholder = f.value != 0
		default:
			return nil, false
		}
	}
}

// priorityInto reads an si.Priority (oneof priorityValue = 1,
// priorityClassName = 2; the last one present wins, as in proto).
func priorityInto(p *si.Priority, value *si.Priority_PriorityValue, t *text, f field) bool {
	r := reader{b: f.data}
	for {
		var g field
		more, bad := r.next(&g)
		if bad {
			return false
		}
		if !more {
			return true
		}
		switch {
		case g.num == 1 && g.typ == protowire.VarintType:
			value.PriorityValue = int32(g.value)
			p.Priority = value
		case g.num == 2 && g.typ == protowire.BytesType:
			g.offset += f.offset
			name, ok := g.str(t)
			if !ok {
				return false
			}
			p.Priority = &si.Priority_PriorityClassName{PriorityClassName: name}
		default:
			return false
		}
	}
}

// quickReSyncArgs takes, in straight-line code, the message the core
// thread sends before a predicate call: one assumed allocation, key and
// node ID short and ASCII.
func quickReSyncArgs(b []byte) (*si.ReSyncSchedulerCacheArgs, bool) {
	if len(b) < 2 || b[0] != 0x0a || b[1] >= 0x80 || int(b[1]) != len(b)-2 {
		return nil, false
	}
	e := b[2:]
	ks, ke, i, _ := shortString(e, 0, 0x0a)
	ns, ne, i, _ := shortString(e, i, 0x12)
	if i != len(e) {
		return nil, false
	}
	if !isASCII(e) {
		return nil, false
	}
	box := new(resyncBox)
	var t string
	if len(e) <= inlineText {
		t = inlineString(box.text[:], e)
	} else {
		t = string(e)
	}
	box.assumed.AllocationKey, box.assumed.NodeID = t[ks:ke], t[ns:ne]
	box.slice[0] = &box.assumed
	box.args.AssumedAllocations = box.slice[:]
	return &box.args, true
}

// resyncBox holds a ReSyncSchedulerCacheArgs with one assumed allocation
// and, when they fit, the bytes of its strings.
type resyncBox struct {
	args    si.ReSyncSchedulerCacheArgs
	slice   [1]*si.AssumedAllocation
	assumed si.AssumedAllocation
	text    [inlineText]byte // the entry's strings, when they fit
}

func fastReSyncArgs(b []byte) (*si.ReSyncSchedulerCacheArgs, bool) {
	if m, ok := quickReSyncArgs(b); ok {
		return m, true
	}
	var assumed, forgotten int
	r := reader{b: b}
	for {
		var f field
		more, bad := r.next(&f)
		if bad || (more && f.typ != protowire.BytesType) {
			return nil, false
		}
		if !more {
			break
		}
		switch f.num {
		case 1:
			assumed++
		case 2:
			forgotten++
		default:
			return nil, false
		}
	}
	var m *si.ReSyncSchedulerCacheArgs
	var single *si.AssumedAllocation
	if assumed == 1 && forgotten == 0 {
		// The core's ReSync before a predicate call: usually one
		// allocation. One allocation for the message, its slice and entry.
		box := new(resyncBox)
		m, single = &box.args, &box.assumed
		m.AssumedAllocations = box.slice[:0]
	} else {
		m = new(si.ReSyncSchedulerCacheArgs)
	}
	if assumed > 1 {
		m.AssumedAllocations = make([]*si.AssumedAllocation, 0, assumed)
	}
	if forgotten > 0 {
		m.ForgetAllocations = make([]*si.ForgotAllocation, 0, forgotten)
	}
	r = reader{b: b}
	for {
		var f field
		more, _ := r.next(&f)
		if !more {
			return m, true
		}
		t := newText(f.data) // the strings of this entry only
		er := reader{b: f.data}
		var key, node string
		for {
			var g field
			more, bad := er.next(&g)
			if bad {
				return nil, false
			}
			if !more {
				break
			}
			var ok bool
			switch {
			case g.num == 1:
				key, ok = g.str(&t)
			case g.num == 2 && f.num == 1:
				node, ok = g.str(&t)
			}
			if !ok {
				return nil, false
			}
		}
		if single != nil {
			single.AllocationKey, single.NodeID = key, node
			m.AssumedAllocations = append(m.AssumedAllocations, single)
		} else if f.num == 1 {
			m.AssumedAllocations = append(m.AssumedAllocations, &si.AssumedAllocation{AllocationKey: key, NodeID: node})
		} else {
			m.ForgetAllocations = append(m.ForgetAllocations, &si.ForgotAllocation{AllocationKey: key})
		}
	}
}
