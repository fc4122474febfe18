// The edition-neutral half of the hand-written decoders (the edition's
// decode.go has the messages whose fields differ between the editions):
// the fallback to proto.Unmarshal, si.PredicatesArgs (its reader is in
// wire.go), si.Resource and si.Quantity, and the library's EventRecords
// batch. The si types and the protobuf library are the edition's
// (edition.go).

package sicore

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// unmarshal decodes a message with proto.Unmarshal; the messages that are
// not sent per allocation take this path (the fast decoders the others).
func unmarshal[M any, P interface {
	*M
	protoMessage
}](b []byte) (P, error) {
	m := P(new(M))
	if err := protoUnmarshal(b, m); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeFast decodes b with fast, or with proto.Unmarshal (counted in
// decodeFallbacks) when fast gives up.
func decodeFast[M any, P interface {
	*M
	protoMessage
}](b []byte, fast func([]byte) (P, bool)) (P, error) {
	if m, ok := fast(b); ok {
		return m, nil
	}
	decodeFallbacks.Add(1)
	return unmarshal[M, P](b)
}

// decodePredicatesArgs decodes an si.PredicatesArgs.
func decodePredicatesArgs(b []byte) (*siPredicatesArgs, error) {
	return decodeFast(b, fastPredicatesArgs)
}

// resourceInto reads an si.Resource (map<string, Quantity> resources = 1)
// at f of the message s into res, taking Quantities from spare while it
// lasts.
func resourceInto(res *siResource, t *text, f field, spare *[2]siQuantity, used *int) bool {
	r := reader{b: f.data}
	for {
		if next, ok := quickEntry(res, t, f, r.pos, spare, used); ok {
			r.pos = next
			continue
		}
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
		var q *siQuantity
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
					q = new(siQuantity)
				}
				if !quantityInto(q, g.data) {
					return false
				}
			default:
				return false
			}
		}
		if res.Resources == nil {
			res.Resources = make(map[string]*siQuantity, 2)
		}
		if q == nil { // an entry without a value: as the edition's proto stores it
			q = absentQuantity()
		}
		res.Resources[name] = q
	}
}

// quickEntry reads, at i of the Resource f, one map entry in the exact
// form the library writes (one-byte lengths; key, then a value of one
// varint field ending the entry) without the general reader, and
// returns the index after it. Anything else is left to resourceInto's
// general path (ok false, nothing changed).
func quickEntry(res *siResource, t *text, f field, i int, spare *[2]siQuantity, used *int) (next int, ok bool) {
	b := f.data
	if i+4 > len(b) || b[i] != 0x0a || b[i+1] >= 0x80 || b[i+2] != 0x0a || b[i+3] >= 0x80 {
		return i, false
	}
	end := i + 2 + int(b[i+1])
	ks := i + 4
	ke := ks + int(b[i+3])
	if end > len(b) || ke+2 > end || b[ke] != 0x12 || b[ke+1] >= 0x80 || ke+2+int(b[ke+1]) != end ||
		end-ke-2 < 2 || b[ke+2] != 0x08 {
		return i, false
	}
	v, n := uint64(b[ke+3]), 1 // a one-byte value (< 128), read inline
	if v >= 0x80 {
		v, n = protowire.ConsumeVarint(b[ke+3 : end])
	}
	if n != end-ke-3 {
		return i, false
	}
	name := t.s[f.offset+ks : f.offset+ke]
	if !t.ascii && !utf8.ValidString(name) {
		return i, false
	}
	var q *siQuantity
	if *used < len(spare) {
		q = &spare[*used]
		*used++
	} else {
		q = new(siQuantity)
	}
	q.Value = int64(v)
	if res.Resources == nil {
		res.Resources = make(map[string]*siQuantity, 2)
	}
	res.Resources[name] = q
	return end, true
}

// quantityInto reads an si.Quantity (int64 value = 1).
func quantityInto(q *siQuantity, b []byte) bool {
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

// decodeEventRecords decodes the library's EventRecords batch message
// (sicore.v1.EventRecords: `repeated si.v1.EventRecord events = 1`).
// Rather than generate code for a one-field wrapper, it walks the wire format with protowire and hands
// each field-1 payload to proto.Unmarshal as an si.EventRecord; other
// fields, which a later library version might add, are skipped.
func decodeEventRecords(b []byte) ([]*siEventRecord, error) {
	var events []*siEventRecord
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("cannot decode EventRecords: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, fmt.Errorf("cannot decode EventRecords.events: %w", protowire.ParseError(m))
			}
			ev := new(siEventRecord)
			if err := protoUnmarshal(v, ev); err != nil {
				return nil, fmt.Errorf("cannot decode EventRecords.events[%d]: %w", len(events), err)
			}
			events = append(events, ev)
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil, fmt.Errorf("cannot decode EventRecords: %w", protowire.ParseError(m))
		}
		b = b[m:]
	}
	return events, nil
}
