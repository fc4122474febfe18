package sicore

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The hand-written decoders (decode.go) are checked against proto.Unmarshal
// of the SI v1.x generated types, the reference: on every input, either
// both fail, or both succeed with messages that proto.Equal finds equal,
// with the same nil-ness of map values (proto stores an empty Quantity
// for an entry without a value), and with strings that do not alias the
// library's buffer.

var testStrings = []string{"", "a", "memory", "vcore", "node-00017", "root.a", "default", "app-1",
	"ask-42", "6f1c9a52-2a0b-4a39-9d7e-0c1f3b8b7a11", "yunikorn.apache.org/requiredNode", "é-ü-日本",
	string(make([]byte, 200))}

func randString(rng *rand.Rand) string {
	if rng.Intn(4) == 0 {
		return fmt.Sprintf("s-%d", rng.Intn(1000))
	}
	return testStrings[rng.Intn(len(testStrings))]
}

func randInt64(rng *rand.Rand) int64 {
	switch rng.Intn(5) {
	case 0:
		return 0
	case 1:
		return -rng.Int63n(1000)
	case 2:
		return math.MaxInt64 - rng.Int63n(3)
	case 3:
		return math.MinInt64 + rng.Int63n(3)
	}
	return rng.Int63n(100000)
}

func randResource(rng *rand.Rand) *si.Resource {
	if rng.Intn(8) == 0 {
		return nil
	}
	r := &si.Resource{}
	n := rng.Intn(5)
	if n > 0 {
		r.Resources = make(map[string]*si.Quantity)
	}
	for i := 0; i < n; i++ {
		r.Resources[randString(rng)] = &si.Quantity{Value: randInt64(rng)}
	}
	return r
}

func randTags(rng *rand.Rand) map[string]string {
	n := rng.Intn(4) - 1
	if n < 0 {
		return nil
	}
	m := make(map[string]string)
	for i := 0; i < n; i++ {
		m[randString(rng)] = randString(rng)
	}
	return m
}

func randPolicy(rng *rand.Rand) *si.PreemptionPolicy {
	if rng.Intn(3) == 0 {
		return nil
	}
	return &si.PreemptionPolicy{AllowPreemptSelf: rng.Intn(2) == 0, AllowPreemptOther: rng.Intn(2) == 0}
}

func randAllocation(rng *rand.Rand) *si.Allocation {
	return &si.Allocation{
		AllocationKey:    randString(rng),
		AllocationTags:   randTags(rng),
		ResourcePerAlloc: randResource(rng),
		Priority:         int32(randInt64(rng)),
		NodeID:           randString(rng),
		ApplicationID:    randString(rng),
		PartitionName:    randString(rng),
		TaskGroupName:    randString(rng),
		Placeholder:      rng.Intn(2) == 0,
		Originator:       rng.Intn(2) == 0,
		PreemptionPolicy: randPolicy(rng),
	}
}

func randRelease(rng *rand.Rand) *si.AllocationRelease {
	return &si.AllocationRelease{PartitionName: randString(rng), ApplicationID: randString(rng),
		AllocationKey: randString(rng), TerminationType: si.TerminationType(rng.Intn(6) - 1), Message: randString(rng)}
}

// randAllocationResponse is mostly new and released allocations, sometimes
// with rejections (which the fast path leaves to proto.Unmarshal).
func randAllocationResponse(rng *rand.Rand) *si.AllocationResponse {
	m := &si.AllocationResponse{}
	for i, n := 0, rng.Intn(6); i < n; i++ {
		m.New = append(m.New, randAllocation(rng))
	}
	for i, n := 0, rng.Intn(4)-1; i < n; i++ {
		m.Released = append(m.Released, randRelease(rng))
	}
	if rng.Intn(6) == 0 {
		m.RejectedAllocations = []*si.RejectedAllocation{{AllocationKey: randString(rng),
			ApplicationID: randString(rng), Reason: randString(rng)}}
	}
	return m
}

func randPredicatesArgs(rng *rand.Rand) *si.PredicatesArgs {
	return &si.PredicatesArgs{AllocationKey: randString(rng), NodeID: randString(rng), Allocate: rng.Intn(2) == 0}
}

// mutate returns a corrupted copy of b: flipped, dropped, inserted or
// duplicated bytes, a truncation, or an appended field.
func mutate(rng *rand.Rand, b []byte) []byte {
	out := append([]byte(nil), b...)
	for i, n := 0, 1+rng.Intn(3); i < n; i++ {
		switch k := rng.Intn(6); {
		case k == 0 && len(out) > 0:
			out[rng.Intn(len(out))] ^= byte(1 << rng.Intn(8))
		case k == 1 && len(out) > 0:
			out[rng.Intn(len(out))] = byte(rng.Intn(256))
		case k == 2 && len(out) > 0:
			out = out[:rng.Intn(len(out))]
		case k == 3:
			at := rng.Intn(len(out) + 1)
			out = append(out[:at], append([]byte{byte(rng.Intn(256))}, out[at:]...)...)
		case k == 4 && len(out) > 1:
			from := rng.Intn(len(out))
			to := from + rng.Intn(len(out)-from)
			out = append(out, out[from:to]...)
		default:
			out = protowire.AppendTag(out, protowire.Number(1+rng.Intn(20)), protowire.Type(rng.Intn(6)))
			out = append(out, byte(rng.Intn(256)), byte(rng.Intn(256)))
		}
	}
	return out
}

// nilQuantities lists the resource entries of a response's allocations
// whose value is a nil pointer, which proto.Equal does not tell from an
// empty Quantity.
func nilQuantities(m proto.Message) []string {
	var out []string
	r, ok := m.(*si.AllocationResponse)
	if !ok {
		return nil
	}
	for i, a := range r.New {
		for k, q := range a.GetResourcePerAlloc().GetResources() {
			if q == nil {
				out = append(out, fmt.Sprintf("%d:%q", i, k))
			}
		}
	}
	return out
}

// checkSame compares a decoder with proto.Unmarshal on b.
func checkSame[M proto.Message](t *testing.T, name string, b []byte, fresh func() M, decode func([]byte) (M, error)) {
	t.Helper()
	want := fresh()
	wantErr := proto.Unmarshal(b, want)
	// The decoder reads a copy that is then overwritten, as the library's
	// buffer is after the callback: nothing decoded may alias it.
	in := append([]byte(nil), b...)
	got, err := decode(in)
	for i := range in {
		in[i] = 0xa5
	}
	switch {
	case wantErr != nil && err == nil:
		t.Fatalf("%s: % x: proto.Unmarshal fails (%v), the decoder gives %v", name, b, wantErr, got)
	case wantErr == nil && err != nil:
		t.Fatalf("%s: % x: proto.Unmarshal gives %v, the decoder fails: %v", name, b, want, err)
	case wantErr == nil && !proto.Equal(got, want):
		t.Fatalf("%s: % x:\n decoder %v\n proto   %v", name, b, got, want)
	case wantErr == nil && fmt.Sprint(nilQuantities(got)) != fmt.Sprint(nilQuantities(want)):
		t.Fatalf("%s: % x: nil quantities %v, proto %v", name, b, nilQuantities(got), nilQuantities(want))
	}
}

func newResponse() *si.AllocationResponse { return new(si.AllocationResponse) }
func newPredicates() *si.PredicatesArgs   { return new(si.PredicatesArgs) }

func TestDecodersMatchProtoUnmarshal(t *testing.T) {
	rng := rand.New(rand.NewSource(18))
	for i := 0; i < 4000; i++ {
		ar, err := proto.Marshal(randAllocationResponse(rng))
		if err != nil {
			t.Fatal(err)
		}
		pa, _ := proto.Marshal(randPredicatesArgs(rng))
		for j, b := range [][]byte{ar, mutate(rng, ar), mutate(rng, ar), ar[:rng.Intn(len(ar)+1)]} {
			checkSame(t, fmt.Sprintf("AllocationResponse %d.%d", i, j), b, newResponse, decodeAllocationResponse)
		}
		for j, b := range [][]byte{pa, mutate(rng, pa), pa[:rng.Intn(len(pa)+1)]} {
			checkSame(t, fmt.Sprintf("PredicatesArgs %d.%d", i, j), b, newPredicates, decodePredicatesArgs)
		}
	}
}

// Messages the fast path must leave to proto.Unmarshal, and messages it
// must take itself.
func TestDecodersEdgeCases(t *testing.T) {
	str := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
	}
	msg := func(num protowire.Number, parts ...[]byte) []byte {
		var body []byte
		for _, p := range parts {
			body = append(body, p...)
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), body)
	}
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	quantity := func(v int64) []byte { return msg(2, varint(1, uint64(v))) }
	cases := []struct {
		name string
		b    []byte
		fast bool
	}{
		{"empty", nil, true},
		{"plain", msg(1, str(1, "pod-1"), msg(5, msg(1, str(1, "memory"), quantity(10))),
			varint(6, uint64(math.MaxUint64)), str(8, "node-1"), str(9, "app"), varint(12, 1), varint(14, 1),
			msg(15, varint(1, 1), varint(2, 0))), true},
		{"negative priority", msg(1, varint(6, uint64(1<<64-5))), true},
		{"priority past int32", msg(1, varint(6, 1<<40+3)), true},
		{"map entry without value", msg(1, msg(5, msg(1, str(1, "memory")))), true},
		{"map entry without key", msg(1, msg(5, msg(1, quantity(3)))), true},
		{"empty quantity", msg(1, msg(5, msg(1, str(1, "vcore"), msg(2)))), true},
		{"repeated key in the map", msg(1, msg(5, msg(1, str(1, "m"), quantity(1)), msg(1, str(1, "m"), quantity(2)))), true},
		{"three quantities", msg(1, msg(5, msg(1, str(1, "a"), quantity(1)), msg(1, str(1, "b"), quantity(2)),
			msg(1, str(1, "c"), quantity(3)))), true},
		{"empty preemption policy", msg(1, msg(15)), true},
		{"tags with a repeated key", msg(1, msg(2, str(1, "k"), str(2, "v1")), msg(2, str(1, "k"), str(2, "v2")), msg(2)), true},
		{"placeholder given as 2", msg(1, varint(12, 2)), true},
		{"non-ASCII strings", msg(1, str(1, "ключ"), msg(2, str(1, "k"), str(2, "日本")), msg(5, msg(1, str(1, "é"), quantity(300)))), true},
		{"invalid UTF-8 after a non-ASCII length", msg(1, str(1, string(make([]byte, 200))+"\xff")), false},
		{"string field given twice", msg(1, str(8, "node-1"), str(8, "node-2")), true},
		{"released", msg(2, str(1, "[rm]default"), str(2, "app"), varint(4, 4), str(5, "replaced"), str(6, "ph-1")), true},
		{"released, negative termination type", msg(2, varint(4, uint64(1<<64-1))), true},
		{"new and released interleaved", append(append(msg(1, str(1, "a")), msg(2, str(6, "b"))...), msg(1, str(1, "c"))...), true},
		{"rejected", msg(5, str(1, "pod"), str(3, "no")), false},
		{"reserved field 3 (releasedAsks)", msg(3, str(1, "pod")), false},
		{"two resources (merged by proto)", msg(1, msg(5, msg(1, str(1, "a"), quantity(1))), msg(5, msg(1, str(1, "b"), quantity(2)))), false},
		{"two preemption policies (merged by proto)", msg(1, msg(15, varint(1, 1)), msg(15, varint(2, 1))), false},
		{"priority as a message (the v0.12 wire)", msg(1, msg(6, varint(1, 5))), false},
		{"map value twice (merged by proto)", msg(1, msg(5, msg(1, str(1, "a"), quantity(1), quantity(2)))), false},
		{"unknown field in an allocation", msg(1, str(1, "k"), varint(99, 1)), false},
		{"reserved UUID field in an allocation", msg(1, str(3, "uuid")), false},
		{"unknown field in a release", msg(2, str(3, "uuid")), false},
		{"unknown field in a quantity", msg(1, msg(5, msg(1, str(1, "a"), msg(2, varint(2, 1))))), false},
		{"unknown field in a map entry", msg(1, msg(2, str(1, "k"), str(3, "x"))), false},
		{"unknown field in a preemption policy", msg(1, msg(15, varint(3, 1))), false},
		{"invalid UTF-8", msg(1, str(1, "\xff\xfe")), false},
		{"invalid UTF-8 in a release", msg(2, str(6, "\xff")), false},
		{"string as varint", msg(1, varint(1, 3)), false},
		{"fixed64 field", append(msg(1), protowire.AppendFixed64(protowire.AppendTag(nil, 12, protowire.Fixed64Type), 1)...), false},
		{"truncated", msg(1, str(1, "pod-1"))[:4], false},
		{"overlong varint", append(protowire.AppendTag(nil, 1, protowire.BytesType), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), false},
		// The one-allocation path (onlyNew) against its neighbours.
		{"one new of 128 bytes (two-byte length)", msg(1, str(1, string(make([]byte, 126)))), true},
		{"one new past maxOneText", msg(1, str(1, string(make([]byte, maxOneText)))), true},
		{"one new, then a stray byte", append(msg(1, str(1, "pod")), 0x00), false},
		{"one new, then a release", append(msg(1, str(1, "pod")), msg(2, str(6, "ph"))...), true},
		{"one new whose length runs past the end", msg(1, str(1, "pod"))[:5], false},
		{"one new whose length stops short", append(msg(1, str(1, "pod")), 0x0a), false},
		{"one empty new", msg(1), true},
		// Map entries against the library-shaped reader (quickEntry).
		{"quantity of an explicit zero", msg(1, msg(5, msg(1, str(1, "memory"), msg(2, varint(1, 0))))), true},
		{"negative quantity (ten-byte varint)", msg(1, msg(5, msg(1, str(1, "vcore"), quantity(-7)))), true},
		{"value before key in a map entry", msg(1, msg(5, msg(1, quantity(4), str(1, "memory")))), true},
		{"quantity with a second value field", msg(1, msg(5, msg(1, str(1, "m"), msg(2, varint(1, 1), varint(1, 2))))), true},
		{"map key of 200 bytes (two-byte length)", msg(1, msg(5, msg(1, str(1, string(make([]byte, 200))), quantity(1)))), true},
		{"invalid UTF-8 map key", msg(1, msg(5, msg(1, str(1, "\xff"), quantity(1)))), false},
	}
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"allocate given as 3", varint(3, 3)},
		{"allocate given as 2", append(str(1, "k"), varint(3, 2)...)},
		{"allocate given as 0", append(str(2, "n"), varint(3, 0)...)},
		{"node before key", append(str(2, "n"), str(1, "k")...)},
		{"key given twice", append(str(1, "k1"), str(1, "k2")...)},
		{"key longer than the message", []byte{0x0a, 0x05, 'a', 'b'}},
		{"node longer than the message", append(str(1, "k"), 0x12, 0x09, 'n')},
		{"non-ASCII key", str(1, "ключ")},
		{"long key", str(1, string(make([]byte, 300)))},
		{"all fields", append(append(str(1, "k"), str(2, "n")...), varint(3, 1)...)},
		{"unknown field", varint(4, 1)},
		{"key as varint", varint(1, 1)},
	} {
		checkSame(t, c.name, c.b, newPredicates, decodePredicatesArgs)
	}
	for _, c := range cases {
		_, fast := fastAllocationResponse(c.b)
		if fast != c.fast {
			t.Errorf("%s: fast path taken %v, want %v", c.name, fast, c.fast)
		}
		checkSame(t, c.name, c.b, newResponse, decodeAllocationResponse)
	}
}

// The fast paths take what the library sends, so the speed-up is real.
func TestDecodersTakeTheLibraryShape(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 200; i++ {
		m := randAllocationResponse(rng)
		m.RejectedAllocations = nil
		b, _ := proto.Marshal(m)
		if _, ok := fastAllocationResponse(b); !ok {
			t.Fatalf("fast path refused a valid AllocationResponse: %v", m)
		}
		b, _ = proto.Marshal(randPredicatesArgs(rng))
		if _, ok := fastPredicatesArgs(b); !ok {
			t.Fatalf("fast path refused a valid PredicatesArgs")
		}
	}
}

// The per-decision message of an RM with Predicates decodes into one
// object and the resource map (the map's header and its group): no more,
// at each of the object's text sizes and their edges.
func TestOneAllocationAllocations(t *testing.T) {
	seen := map[int]bool{}
	for _, keyLen := range []int{10, 34, 35, 129, 130, 257, 258} {
		b, err := proto.Marshal(&si.AllocationResponse{New: []*si.Allocation{{
			AllocationKey: strings.Repeat("k", keyLen), NodeID: "node-0042", ApplicationID: "app-a",
			PartitionName:    "default",
			ResourcePerAlloc: &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: 10}, "vcore": {Value: 1}}},
			PreemptionPolicy: &si.PreemptionPolicy{AllowPreemptSelf: true}}}})
		if err != nil {
			t.Fatal(err)
		}
		first, ok := onlyNew(b)
		if !ok {
			t.Fatalf("key of %d: not recognised as one new", keyLen)
		}
		seen[len(first)] = true
		name := fmt.Sprintf("one allocation of %d bytes", len(first))
		checkSame(t, name, b, newResponse, decodeAllocationResponse)
		want := 3.0
		if len(first) > maxOneText {
			want = 6 // the batch path: response, slice, box, text, map
		}
		if n := testing.AllocsPerRun(50, func() {
			if _, ok := fastAllocationResponse(b); !ok {
				t.Fatalf("%s: fast path refused", name)
			}
		}); n > want {
			t.Errorf("%s: %v heap allocations, want at most %v", name, n, want)
		}
	}
	for _, edge := range []int{96, 97, 192, 193, maxOneText, maxOneText + 1} {
		if !seen[edge] {
			t.Errorf("no message of %d bytes tried (the sizes' edges)", edge)
		}
	}
}

// FuzzDecodeAllocationResponse extends the random test with the fuzzer:
//
//	go test -tags sicore_checkout -run XXX -fuzz FuzzDecodeAllocationResponse ./pkg/sicore
func FuzzDecodeAllocationResponse(f *testing.F) {
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 20; i++ {
		b, _ := proto.Marshal(randAllocationResponse(rng))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkSame(t, "fuzz", b, newResponse, decodeAllocationResponse)
		checkSame(t, "fuzz", b, newPredicates, decodePredicatesArgs)
	})
}

// BenchmarkDecodeAllocationResponse compares the decoder with
// proto.Unmarshal on responses shaped like the library's: a batch of 100
// allocations (no Predicates callback) and the one allocation of each
// decision (with one).
func BenchmarkDecodeAllocationResponse(b *testing.B) {
	for _, n := range []int{100, 1} {
		m := &si.AllocationResponse{}
		for i := 0; i < n; i++ {
			m.New = append(m.New, &si.Allocation{
				AllocationKey:    fmt.Sprintf("app-a-%d", i),
				ResourcePerAlloc: &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: 10}, "vcore": {Value: 1}}},
				NodeID:           fmt.Sprintf("node-%04d", i), ApplicationID: "app-a", PartitionName: "[rm-bench]default",
			})
		}
		data, _ := proto.Marshal(m)
		b.Run(fmt.Sprintf("new=%d/decoder", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := decodeAllocationResponse(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("new=%d/proto.Unmarshal", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := proto.Unmarshal(data, new(si.AllocationResponse)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodePredicatesArgs compares the decoder of the core thread's
// per-node question with proto.Unmarshal.
func BenchmarkDecodePredicatesArgs(b *testing.B) {
	pred, _ := proto.Marshal(&si.PredicatesArgs{AllocationKey: "app-a-1234", NodeID: "node-0042", Allocate: true})
	b.Run("decoder", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := decodePredicatesArgs(pred); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proto.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if err := proto.Unmarshal(pred, new(si.PredicatesArgs)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
