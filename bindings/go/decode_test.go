package sicore

import (
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"testing"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
	"github.com/golang/protobuf/proto"
	"google.golang.org/protobuf/encoding/protowire"
)

// The hand-written decoders (decode.go) are checked against proto.Unmarshal,
// the reference: on every input, either both fail, or both succeed with
// deeply equal messages (nil and empty maps and slices told apart).

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
		var q *si.Quantity
		if rng.Intn(10) != 0 {
			q = &si.Quantity{Value: randInt64(rng)}
		}
		r.Resources[randString(rng)] = q
	}
	return r
}

func randPriority(rng *rand.Rand) *si.Priority {
	switch rng.Intn(4) {
	case 0:
		return nil
	case 1:
		return &si.Priority{}
	case 2:
		return &si.Priority{Priority: &si.Priority_PriorityClassName{PriorityClassName: randString(rng)}}
	}
	return &si.Priority{Priority: &si.Priority_PriorityValue{PriorityValue: int32(randInt64(rng))}}
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

func randAllocation(rng *rand.Rand) *si.Allocation {
	return &si.Allocation{
		AllocationKey:    randString(rng),
		AllocationTags:   randTags(rng),
		UUID:             randString(rng),
		ResourcePerAlloc: randResource(rng),
		Priority:         randPriority(rng),
		QueueName:        randString(rng),
		NodeID:           randString(rng),
		ApplicationID:    randString(rng),
		PartitionName:    randString(rng),
		TaskGroupName:    randString(rng),
		Placeholder:      rng.Intn(2) == 0,
	}
}

// randAllocationResponse is mostly new allocations, sometimes with the
// other fields (which the fast path leaves to proto.Unmarshal).
func randAllocationResponse(rng *rand.Rand) *si.AllocationResponse {
	m := &si.AllocationResponse{}
	for i, n := 0, rng.Intn(6); i < n; i++ {
		m.New = append(m.New, randAllocation(rng))
	}
	if rng.Intn(5) == 0 {
		m.Released = []*si.AllocationRelease{{PartitionName: randString(rng), UUID: randString(rng),
			TerminationType: si.TerminationType_STOPPED_BY_RM, Message: randString(rng)}}
		m.Rejected = []*si.RejectedAllocationAsk{{AllocationKey: randString(rng), Reason: randString(rng)}}
	}
	return m
}

func randPredicatesArgs(rng *rand.Rand) *si.PredicatesArgs {
	return &si.PredicatesArgs{AllocationKey: randString(rng), NodeID: randString(rng), Allocate: rng.Intn(2) == 0}
}

func randReSyncArgs(rng *rand.Rand) *si.ReSyncSchedulerCacheArgs {
	m := &si.ReSyncSchedulerCacheArgs{}
	for i, n := 0, rng.Intn(4); i < n; i++ {
		m.AssumedAllocations = append(m.AssumedAllocations,
			&si.AssumedAllocation{AllocationKey: randString(rng), NodeID: randString(rng)})
	}
	for i, n := 0, rng.Intn(3)-1; i < n; i++ {
		m.ForgetAllocations = append(m.ForgetAllocations, &si.ForgotAllocation{AllocationKey: randString(rng)})
	}
	return m
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

// checkSame compares a decoder with proto.Unmarshal on b.
func checkSame[M proto.Message](t *testing.T, name string, b []byte, fresh func() M, decode func([]byte) (M, error)) {
	t.Helper()
	want := fresh()
	wantErr := proto.Unmarshal(b, want)
	got, err := decode(b)
	switch {
	case wantErr != nil && err == nil:
		t.Fatalf("%s: % x: proto.Unmarshal fails (%v), the decoder gives %v", name, b, wantErr, got)
	case wantErr == nil && err != nil:
		t.Fatalf("%s: % x: proto.Unmarshal gives %v, the decoder fails: %v", name, b, want, err)
	case wantErr == nil && !reflect.DeepEqual(got, want):
		t.Fatalf("%s: % x:\n decoder %#v\n proto   %#v", name, b, got, want)
	}
}

func TestDecodersMatchProtoUnmarshal(t *testing.T) {
	rng := rand.New(rand.NewSource(15))
	for i := 0; i < 4000; i++ {
		ar, err := proto.Marshal(randAllocationResponse(rng))
		if err != nil {
			t.Fatal(err)
		}
		pa, _ := proto.Marshal(randPredicatesArgs(rng))
		rs, _ := proto.Marshal(randReSyncArgs(rng))
		for j, b := range [][]byte{ar, mutate(rng, ar), mutate(rng, ar), ar[:rng.Intn(len(ar)+1)]} {
			checkSame(t, fmt.Sprintf("AllocationResponse %d.%d", i, j), b,
				func() *si.AllocationResponse { return new(si.AllocationResponse) }, decodeAllocationResponse)
		}
		for j, b := range [][]byte{pa, mutate(rng, pa), pa[:rng.Intn(len(pa)+1)]} {
			checkSame(t, fmt.Sprintf("PredicatesArgs %d.%d", i, j), b,
				func() *si.PredicatesArgs { return new(si.PredicatesArgs) }, decodePredicatesArgs)
		}
		for j, b := range [][]byte{rs, mutate(rng, rs), rs[:rng.Intn(len(rs)+1)]} {
			checkSame(t, fmt.Sprintf("ReSyncSchedulerCacheArgs %d.%d", i, j), b,
				func() *si.ReSyncSchedulerCacheArgs { return new(si.ReSyncSchedulerCacheArgs) },
				decodeReSyncSchedulerCacheArgs)
		}
	}
}

// Messages the fast path must leave to proto.Unmarshal, and the reason,
// plus messages it must take itself.
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
		{"plain", msg(1, str(1, "ask-1"), str(3, "uuid"), msg(5, msg(1, str(1, "memory"), quantity(10))),
			msg(6, varint(1, uint64(math.MaxUint64))), str(8, "node-1"), varint(12, 1)), true},
		{"map entry without value", msg(1, msg(5, msg(1, str(1, "memory")))), true},
		{"map entry without key", msg(1, msg(5, msg(1, quantity(3)))), true},
		{"empty quantity", msg(1, msg(5, msg(1, str(1, "vcore"), msg(2)))), true},
		{"repeated key in the map", msg(1, msg(5, msg(1, str(1, "m"), quantity(1)), msg(1, str(1, "m"), quantity(2)))), true},
		{"three quantities", msg(1, msg(5, msg(1, str(1, "a"), quantity(1)), msg(1, str(1, "b"), quantity(2)),
			msg(1, str(1, "c"), quantity(3)))), true},
		{"priority value then class", msg(1, msg(6, varint(1, 5), str(2, "high"))), true},
		{"priority class then value", msg(1, msg(6, str(2, "high"), varint(1, 7), varint(1, 8))), true},
		{"tags with a repeated key", msg(1, msg(2, str(1, "k"), str(2, "v1")), msg(2, str(1, "k"), str(2, "v2")), msg(2)), true},
		{"placeholder given as 2", msg(1, varint(12, 2)), true},
		{"non-ASCII strings", msg(1, str(1, "ключ"), msg(2, str(1, "k"), str(2, "日本")), msg(5, msg(1, str(1, "é"), quantity(300)))), true},
		{"invalid UTF-8 after a non-ASCII length", msg(1, str(1, string(make([]byte, 200))+"\xff")), false},
		{"string field given twice", msg(1, str(8, "node-1"), str(8, "node-2")), true},
		{"two resources (merged by proto)", msg(1, msg(5, msg(1, str(1, "a"), quantity(1))), msg(5, msg(1, str(1, "b"), quantity(2)))), false},
		{"two priorities (merged by proto)", msg(1, msg(6, varint(1, 1)), msg(6)), false},
		{"map value twice (merged by proto)", msg(1, msg(5, msg(1, str(1, "a"), quantity(1), quantity(2)))), false},
		{"unknown field in an allocation", msg(1, str(1, "k"), varint(99, 1)), false},
		{"unknown field in a quantity", msg(1, msg(5, msg(1, str(1, "a"), msg(2, varint(2, 1))))), false},
		{"unknown field in a map entry", msg(1, msg(2, str(1, "k"), str(3, "x"))), false},
		{"invalid UTF-8", msg(1, str(1, "\xff\xfe")), false},
		{"string as varint", msg(1, varint(1, 3)), false},
		{"released", msg(2, str(3, "uuid")), false},
		{"fixed64 field", append(msg(1), protowire.AppendFixed64(protowire.AppendTag(nil, 12, protowire.Fixed64Type), 1)...), false},
		{"truncated", msg(1, str(1, "ask-1"))[:4], false},
		{"overlong varint", append(protowire.AppendTag(nil, 1, protowire.BytesType), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), false},
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
		checkSame(t, c.name, c.b, func() *si.PredicatesArgs { return new(si.PredicatesArgs) }, decodePredicatesArgs)
	}
	entry := func(parts ...[]byte) []byte { return msg(1, parts...) }
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"one assumed", entry(str(1, "k"), str(2, "n"))},
		{"one assumed, no node", entry(str(1, "k"))},
		{"one assumed, empty", entry()},
		{"node before key", entry(str(2, "n"), str(1, "k"))},
		{"outer length short", append(entry(str(1, "k")), 0x00)},
		{"inner length past the entry", []byte{0x0a, 0x03, 0x0a, 0x05, 'k'}},
		{"two assumed", append(entry(str(1, "a")), entry(str(1, "b"))...)},
		{"assumed and forgotten", append(entry(str(1, "a")), msg(2, str(1, "b"))...)},
		{"non-ASCII node", entry(str(1, "k"), str(2, "узел"))},
		{"unknown field in the entry", entry(str(1, "k"), varint(3, 1))},
	} {
		checkSame(t, c.name, c.b, func() *si.ReSyncSchedulerCacheArgs { return new(si.ReSyncSchedulerCacheArgs) },
			decodeReSyncSchedulerCacheArgs)
	}
	for _, c := range cases {
		_, fast := fastAllocationResponse(c.b)
		if fast != c.fast {
			t.Errorf("%s: fast path taken %v, want %v", c.name, fast, c.fast)
		}
		checkSame(t, c.name, c.b, func() *si.AllocationResponse { return new(si.AllocationResponse) }, decodeAllocationResponse)
	}
}

// The fast paths take what the library sends, so the speed-up is real.
func TestDecodersTakeTheLibraryShape(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 200; i++ {
		m := randAllocationResponse(rng)
		m.Released, m.Rejected = nil, nil
		b, _ := proto.Marshal(m)
		if _, ok := fastAllocationResponse(b); !ok {
			t.Fatalf("fast path refused a valid AllocationResponse: %v", m)
		}
		b, _ = proto.Marshal(randPredicatesArgs(rng))
		if _, ok := fastPredicatesArgs(b); !ok {
			t.Fatalf("fast path refused a valid PredicatesArgs")
		}
		b, _ = proto.Marshal(randReSyncArgs(rng))
		if _, ok := fastReSyncArgs(b); !ok {
			t.Fatalf("fast path refused a valid ReSyncSchedulerCacheArgs")
		}
	}
}

// FuzzDecodeAllocationResponse extends the random test with the fuzzer:
//
//	go test -tags sicore_checkout -run XXX -fuzz FuzzDecodeAllocationResponse
func FuzzDecodeAllocationResponse(f *testing.F) {
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 20; i++ {
		b, _ := proto.Marshal(randAllocationResponse(rng))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkSame(t, "fuzz", b, func() *si.AllocationResponse { return new(si.AllocationResponse) }, decodeAllocationResponse)
		checkSame(t, "fuzz", b, func() *si.PredicatesArgs { return new(si.PredicatesArgs) }, decodePredicatesArgs)
		checkSame(t, "fuzz", b, func() *si.ReSyncSchedulerCacheArgs { return new(si.ReSyncSchedulerCacheArgs) },
			decodeReSyncSchedulerCacheArgs)
	})
}

// BenchmarkDecodeAllocationResponse compares the decoder with
// proto.Unmarshal on a batch of 100 allocations shaped like the library's.
func BenchmarkDecodeAllocationResponse(b *testing.B) {
	m := &si.AllocationResponse{}
	for i := 0; i < 100; i++ {
		m.New = append(m.New, &si.Allocation{
			AllocationKey: fmt.Sprintf("app-a-%d", i), UUID: "6f1c9a52-2a0b-4a39-9d7e-0c1f3b8b7a11",
			ResourcePerAlloc: &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: 10}, "vcore": {Value: 1}}},
			Priority:         &si.Priority{Priority: &si.Priority_PriorityValue{}},
			QueueName:        "root.a", NodeID: fmt.Sprintf("node-%04d", i), ApplicationID: "app-a", PartitionName: "[rm-bench]default",
		})
	}
	data, _ := proto.Marshal(m)
	b.Run("decoder", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := decodeAllocationResponse(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proto.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if err := proto.Unmarshal(data, new(si.AllocationResponse)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestLibraryMessagesTakeTheFastPath drives the library: asks with tags,
// a priority, a placeholder and non-ASCII names become allocations with
// Predicates registered. Every AllocationResponse with new allocations,
// every PredicatesArgs and every ReSyncSchedulerCacheArgs the library
// sends must take the fast path (no fallback to proto.Unmarshal), and the
// RM must see the fields it asked for.
func TestLibraryMessagesTakeTheFastPath(t *testing.T) {
	s := newTestScheduler(t)
	rm := newFakeRM()
	const rmID = "rm-fast"
	setUp(t, s, rmID, rm, "app-é", "root.fast", "node-1", "node-2")
	before := decodeFallbacks.Load()
	req := &si.AllocationRequest{RmID: rmID}
	for i := 0; i < 20; i++ {
		a := ask("app-é", fmt.Sprintf("ask-%d-ü", i), 100, 1)
		a.Tags = map[string]string{"kubernetes.io/label/app": "web", "k": "v"}
		a.Priority = &si.Priority{Priority: &si.Priority_PriorityValue{PriorityValue: int32(i - 5)}}
		req.Asks = append(req.Asks, a)
	}
	if err := s.UpdateAllocation(req); err != nil {
		t.Fatalf("UpdateAllocation: %v", err)
	}
	waitFor(t, "20 allocations", func() bool { return rm.allocationCount() == 20 })
	if n := decodeFallbacks.Load() - before; n != 0 {
		t.Errorf("%d library messages fell back to proto.Unmarshal", n)
	}
	rm.read(func() {
		if rm.predicateCalls < 20 {
			t.Errorf("%d predicate calls, want at least 20", rm.predicateCalls)
		}
		for _, a := range rm.allocations {
			var i int
			if _, err := fmt.Sscanf(a.AllocationKey, "ask-%d-ü", &i); err != nil {
				t.Fatalf("allocation key %q", a.AllocationKey)
			}
			if a.ApplicationID != "app-é" || a.QueueName != "root.fast" || a.UUID == "" ||
				a.ResourcePerAlloc.GetResources()["memory"].GetValue() != 100 ||
				a.ResourcePerAlloc.GetResources()["vcore"].GetValue() != 1 ||
				a.Priority.GetPriorityValue() != int32(i-5) || a.AllocationTags["k"] != "v" {
				t.Errorf("allocation %v does not carry its ask's fields", a)
			}
		}
	})
}

// BenchmarkDecodeCoreThreadMessages compares the decoders of the two
// messages the core thread sends per decision with proto.Unmarshal.
func BenchmarkDecodeCoreThreadMessages(b *testing.B) {
	pred, _ := proto.Marshal(&si.PredicatesArgs{AllocationKey: "app-a-1234", NodeID: "node-0042", Allocate: true})
	resync, _ := proto.Marshal(&si.ReSyncSchedulerCacheArgs{AssumedAllocations: []*si.AssumedAllocation{
		{AllocationKey: "app-a-1233", NodeID: "node-0041"}}})
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"PredicatesArgs/decoder", func() error { _, err := decodePredicatesArgs(pred); return err }},
		{"PredicatesArgs/proto.Unmarshal", func() error { return proto.Unmarshal(pred, new(si.PredicatesArgs)) }},
		{"ReSyncSchedulerCacheArgs/decoder", func() error { _, err := decodeReSyncSchedulerCacheArgs(resync); return err }},
		{"ReSyncSchedulerCacheArgs/proto.Unmarshal", func() error {
			return proto.Unmarshal(resync, new(si.ReSyncSchedulerCacheArgs))
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := c.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
