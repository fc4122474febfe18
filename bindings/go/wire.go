// The protobuf wire helpers of the hand-written decoders (decode.go) and
// encoder (encode.go), and the decoder of si.PredicatesArgs, whose fields
// are the same in both editions (siPredicatesArgs: the edition's
// decode.go).

package sicore

import (
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
)

// decodeFallbacks counts the messages the fast paths left to
// proto.Unmarshal; tests check that the library's own messages never are.
var decodeFallbacks atomic.Int64

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

// inlineString copies b (at most len(buf) bytes, buf not empty) into buf
// and returns the copy as a string.
func inlineString(buf []byte, b []byte) string {
	n := copy(buf, b)
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
func quickPredicatesArgs(b []byte) (*siPredicatesArgs, bool) {
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
		return &siPredicatesArgs{AllocationKey: t[ks:ke], NodeID: t[ns:ne], Allocate: allocate}, true
	}
	// One allocation for the message and the bytes of its strings.
	box := new(predicatesBox)
	t := inlineString(box.text[:], b)
	box.args.AllocationKey, box.args.NodeID, box.args.Allocate = t[ks:ke], t[ns:ne], allocate
	return &box.args, true
}

// predicatesBox holds a PredicatesArgs and the bytes of its strings.
type predicatesBox struct {
	args siPredicatesArgs
	text [inlineText]byte
}

func fastPredicatesArgs(b []byte) (*siPredicatesArgs, bool) {
	if m, ok := quickPredicatesArgs(b); ok {
		return m, true
	}
	m := new(siPredicatesArgs)
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

// errFallback stops the encoder; the request then goes through proto.Marshal.
var errFallback = errors.New("not for the fast encoder")

// requestBuffers recycles the buffers UpdateAllocation encodes into: the
// library decodes a request before sicore_update_allocation returns and
// keeps no reference to it, so the buffer is free again right after. A
// request of a few thousand asks (pods) is hundreds of KiB, which a fresh slice
// would take from the OS (page faults) and leave to the collector.
var requestBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledRequest is the largest buffer kept for reuse.
const maxPooledRequest = 4 << 20

// maxAlikeRoom bounds what roomForAlike reserves: past it the buffer
// grows by doubling, as append does.
const maxAlikeRoom = 16 << 20

// roomForAlike makes room in b for more entries of about each bytes (a
// request's asks are alike, so the first one's size stands for the rest,
// with an eighth more for keys that grow longer, "pod-9" to "pod-10000"):
// one allocation instead of a doubling every time the buffer fills, each
// copying what is there. A first entry larger than the rest reserves more
// than needed, at most maxAlikeRoom.
func roomForAlike(b []byte, each, more int) []byte {
	if more <= 0 || each <= 0 {
		return b
	}
	each += each/8 + 1
	room := maxAlikeRoom
	if more <= room/each {
		room = more * each
	}
	return slices.Grow(b, room) // a no-op when b has the room
}

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
