package sicore

import (
	"encoding/binary"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
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

// decodeFallbacks counts the messages the fast paths left to
// proto.Unmarshal; a test checks that the library's answers never are.
var decodeFallbacks atomic.Int64

// decodeAllocationResponse decodes an si.AllocationResponse.
func decodeAllocationResponse(b []byte) (*si.AllocationResponse, error) {
	if m, ok := fastAllocationResponse(b); ok {
		return m, nil
	}
	decodeFallbacks.Add(1)
	m := new(si.AllocationResponse)
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, err
	}
	return m, nil
}

// decodePredicatesArgs decodes an si.PredicatesArgs.
func decodePredicatesArgs(b []byte) (*si.PredicatesArgs, error) {
	if m, ok := fastPredicatesArgs(b); ok {
		return m, nil
	}
	decodeFallbacks.Add(1)
	m := new(si.PredicatesArgs)
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, err
	}
	return m, nil
}

// field is one field of a message being read: its number and wire type,
// and for a length-delimited field the payload and its offset in the
// message (for substrings), for a varint field the value.
type field struct {
	num    protowire.Number
	typ    protowire.Type
	data   []byte
	offset int
	value  uint64
}

// reader walks the fields of one message.
type reader struct {
	b   []byte
	pos int
}

// next reads the next field. ok is false at the end of the message or,
// with bad set, on anything the fast path does not take: a malformed
// field or a wire type other than varint or length-delimited. One-byte
// tags and lengths, nearly all of them, are read inline.
func (r *reader) next(f *field) (ok, bad bool) {
	if r.pos >= len(r.b) {
		return false, false
	}
	rest := r.b[r.pos:]
	tag, n := uint64(rest[0]), 1
	if tag >= 0x80 {
		if tag, n = protowire.ConsumeVarint(rest); n < 0 {
			return false, true
		}
	}
	// Field numbers above 2^29-1 are invalid; refusing them here also
	// keeps a huge tag from truncating to a known number.
	if tag>>3 > uint64(protowire.MaxValidNumber) {
		return false, true
	}
	rest = rest[n:]
	f.num, f.typ = protowire.Number(tag>>3), protowire.Type(tag&7)
	switch f.typ {
	case protowire.VarintType:
		if len(rest) > 0 && rest[0] < 0x80 {
			f.value = uint64(rest[0])
			r.pos += n + 1
			break
		}
		v, m := protowire.ConsumeVarint(rest)
		if m < 0 {
			return false, true
		}
		f.value = v
		r.pos += n + m
	case protowire.BytesType:
		l, m := uint64(0), 1
		if len(rest) > 0 && rest[0] < 0x80 {
			l = uint64(rest[0])
		} else if l, m = protowire.ConsumeVarint(rest); m < 0 {
			return false, true
		}
		if l > uint64(len(rest)-m) {
			return false, true
		}
		f.data = rest[m : m+int(l)]
		f.offset = r.pos + n + m
		r.pos += n + m + int(l)
	default:
		return false, true
	}
	return true, false
}

// text is the string copy of one message's bytes that its string fields
// are cut from; ascii records that no byte has the high bit set, so that
// no string in it needs a UTF-8 check.
type text struct {
	s     string
	ascii bool
}

func newText(b []byte) text {
	return text{s: string(b), ascii: isASCII(b)}
}

// isASCII reports whether no byte of b has the high bit set.
func isASCII(b []byte) bool {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(b); i++ {
		if b[i] >= 0x80 {
			return false
		}
	}
	return true
}

// inlineText is how many bytes of a core-thread message are copied into
// the message's own allocation for its strings: a pod's key and a node's
// name fit.
const inlineText = 64

// inlineString copies b (at most inlineText bytes) into buf and returns
// the copy as a string.
func inlineString(buf *[inlineText]byte, b []byte) string {
	n := copy(buf[:], b)
	// SAFETY: buf is part of a heap object that the string, an interior
	// pointer, keeps alive; nothing writes to buf after this copy, so the
	// string's bytes never change.
	return unsafe.String(&buf[0], n)
}

// str returns field f of the message t as a substring of t, or false when
// f is not a length-delimited field of valid UTF-8 (proto reports invalid
// UTF-8 in a proto3 string as an error).
func (f *field) str(t *text) (string, bool) {
	if f.typ != protowire.BytesType {
		return "", false
	}
	v := t.s[f.offset : f.offset+len(f.data)]
	if !t.ascii && !utf8.ValidString(v) {
		return "", false
	}
	return v, true
}

// allocationBox holds an Allocation and the small messages it points to,
// so that decoding one allocation costs one allocation for them.
type allocationBox struct {
	alloc    si.Allocation
	resource si.Resource
	quantity [2]si.Quantity
	policy   si.PreemptionPolicy
}

// fastAllocationResponse takes new (1) and released (2); anything else,
// rejectedAllocations included (rare), goes to proto.Unmarshal.
func fastAllocationResponse(b []byte) (*si.AllocationResponse, bool) {
	// Count first, so each slice is allocated once.
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
		case 1, 8, 9, 10, 11:
			v, ok := f.str(&t)
			if !ok {
				return nil, false
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
		case 6, 12, 14:
			if f.typ != protowire.VarintType {
				return nil, false
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
				return nil, false
			}
			if !policyInto(&box.policy, f.data) {
				return nil, false
			}
			a.PreemptionPolicy = &box.policy
		default:
			return nil, false
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

// stringEntry reads a map<string, string> entry (key = 1, value = 2) at f
// of the message s.
func stringEntry(t *text, f field) (k, v string, ok bool) {
	r := reader{b: f.data}
	for {
		var e field
		more, bad := r.next(&e)
		if bad {
			return "", "", false
		}
		if !more {
			return k, v, true
		}
		e.offset += f.offset
		switch e.num {
		case 1:
			if k, ok = e.str(t); !ok {
				return "", "", false
			}
		case 2:
			if v, ok = e.str(t); !ok {
				return "", "", false
			}
		default:
			return "", "", false
		}
	}
}

// resourceInto reads an si.Resource (map<string, Quantity> resources = 1)
// at f of the message s into res, taking Quantities from spare while it
// lasts.
func resourceInto(res *si.Resource, t *text, f field, spare *[2]si.Quantity, used *int) bool {
	r := reader{b: f.data}
	for {
		var e field
		more, bad := r.next(&e)
		if bad {
			return false
		}
		if !more {
			return true
		}
		if e.num != 1 || e.typ != protowire.BytesType {
			return false
		}
		e.offset += f.offset
		var name string
		var q *si.Quantity
		er := reader{b: e.data}
		for {
			var g field
			more, bad := er.next(&g)
			if bad {
				return false
			}
			if !more {
				break
			}
			switch g.num {
			case 1:
				g.offset += e.offset
				var ok bool
				if name, ok = g.str(t); !ok {
					return false
				}
			case 2: // a second value would be merged into the first by proto
				if g.typ != protowire.BytesType || q != nil {
					return false
				}
				if *used < len(spare) {
					q = &spare[*used]
					*used++
				} else {
					q = new(si.Quantity)
				}
				if !quantityInto(q, g.data) {
					return false
				}
			default:
				return false
			}
		}
		if res.Resources == nil {
			res.Resources = make(map[string]*si.Quantity, 2)
		}
		if q == nil { // an entry without a value: proto stores an empty Quantity
			q = new(si.Quantity)
		}
		res.Resources[name] = q
	}
}

// quantityInto reads an si.Quantity (int64 value = 1).
func quantityInto(q *si.Quantity, b []byte) bool {
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
		if f.num != 1 || f.typ != protowire.VarintType {
			return false
		}
		q.Value = int64(f.value)
	}
}

// shortString reads, at b[i:], the string field whose one-byte tag is tag
// and whose length fits one byte, as the library writes keys and node
// IDs. It returns the bounds of the string and the index after it, or i
// unchanged (ok false) when the field is not there in that form. The
// bounds may run past b: the callers check that the message ends exactly
// where the last field does before they slice.
func shortString(b []byte, i int, tag byte) (start, end, next int, ok bool) {
	if i+1 < len(b) && b[i] == tag && b[i+1] < 0x80 {
		start = i + 2
		end = start + int(b[i+1])
		return start, end, end, true
	}
	return 0, 0, i, false
}

// quickPredicatesArgs takes the exact layout the library writes (key,
// node ID, allocate, each optional, in that order, short and ASCII) in
// straight-line code; fastPredicatesArgs takes the rest.
func quickPredicatesArgs(b []byte) (*si.PredicatesArgs, bool) {
	ks, ke, i, _ := shortString(b, 0, 0x0a)
	ns, ne, i, _ := shortString(b, i, 0x12)
	allocate := false
	if i+1 < len(b) && b[i] == 0x18 && b[i+1] <= 1 {
		allocate = b[i+1] == 1
		i += 2
	}
	if i != len(b) {
		return nil, false
	}
	if !isASCII(b) {
		return nil, false
	}
	if len(b) > inlineText {
		t := string(b)
		return &si.PredicatesArgs{AllocationKey: t[ks:ke], NodeID: t[ns:ne], Allocate: allocate}, true
	}
	// One allocation for the message and the bytes of its strings.
	box := new(predicatesBox)
	t := inlineString(&box.text, b)
	box.args.AllocationKey, box.args.NodeID, box.args.Allocate = t[ks:ke], t[ns:ne], allocate
	return &box.args, true
}

// predicatesBox holds a PredicatesArgs and the bytes of its strings.
type predicatesBox struct {
	args si.PredicatesArgs
	text [inlineText]byte
}

func fastPredicatesArgs(b []byte) (*si.PredicatesArgs, bool) {
	if m, ok := quickPredicatesArgs(b); ok {
		return m, true
	}
	m := new(si.PredicatesArgs)
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
			m.AllocationKey, ok = f.str(&t)
		case 2:
			m.NodeID, ok = f.str(&t)
		case 3:
			m.Allocate, ok = f.value != 0, f.typ == protowire.VarintType
		}
		if !ok {
			return nil, false
		}
	}
}
