package sicore

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"google.golang.org/protobuf/proto"
)

func randRequestAllocation(rng *rand.Rand) *si.Allocation {
	if rng.Intn(50) == 0 {
		return nil // proto.Marshal may refuse a nil element; the encoder leaves it to it
	}
	a := randAllocation(rng)
	if a.ResourcePerAlloc != nil && len(a.ResourcePerAlloc.Resources) > 0 && rng.Intn(30) == 0 {
		for k := range a.ResourcePerAlloc.Resources {
			a.ResourcePerAlloc.Resources[k] = nil // a nil map value
			break
		}
	}
	return a
}

func randAllocationRequest(rng *rand.Rand) *si.AllocationRequest {
	m := &si.AllocationRequest{RmID: randString(rng)}
	for i, n := 0, rng.Intn(5); i < n; i++ {
		m.Allocations = append(m.Allocations, randRequestAllocation(rng))
	}
	if rng.Intn(3) == 0 {
		m.Releases = &si.AllocationReleasesRequest{}
		for i, n := 0, rng.Intn(3); i < n; i++ {
			m.Releases.AllocationsToRelease = append(m.Releases.AllocationsToRelease, randRelease(rng))
		}
	}
	switch rng.Intn(40) {
	case 0:
		m.RmID = "\xff" // invalid UTF-8: proto.Marshal reports it
	case 1:
		m.ProtoReflect().SetUnknown([]byte{0xf8, 0x01, 0x01}) // field 31, varint 1
	case 2:
		if len(m.Allocations) > 0 && m.Allocations[0] != nil {
			m.Allocations[0].TaskGroupName = "\xc3"
		}
	}
	return m
}

// TestEncodeAllocationRequestMatchesProto: the encoder writes what
// proto.Marshal writes in deterministic mode, byte for byte, and fails
// where proto.Marshal fails.
func TestEncodeAllocationRequestMatchesProto(t *testing.T) {
	rng := rand.New(rand.NewSource(18))
	fast := 0
	det := proto.MarshalOptions{Deterministic: true}
	for i := 0; i < 5000; i++ {
		m := randAllocationRequest(rng)
		want, wantErr := det.Marshal(m)
		got, err := encodeAllocationRequest(make([]byte, 7), m) // a dirty buffer
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%d: encoder error %v, proto.Marshal error %v, for %v", i, err, wantErr, m)
		}
		if err != nil {
			continue
		}
		if _, err := appendAllocationRequest(nil, m); err == nil {
			fast++
			if !bytes.Equal(got, want) {
				t.Fatalf("%d: %v\n encoder % x\n proto   % x", i, m, got, want)
			}
			continue
		}
		// proto.Marshal's own (non-deterministic) output: compare decoded.
		a, b := new(si.AllocationRequest), new(si.AllocationRequest)
		if err := proto.Unmarshal(got, a); err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(want, b); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(a, b) {
			t.Fatalf("%d: decoded %v, want %v", i, a, b)
		}
	}
	if fast < 3000 {
		t.Errorf("the encoder took only %d of 5000 requests itself", fast)
	}
}

// A resize or a large request needs lengths past one byte: the encoder
// widens them in place.
func TestEncodeLongFields(t *testing.T) {
	long := string(bytes.Repeat([]byte("x"), 300))
	m := &si.AllocationRequest{RmID: "rm", Allocations: []*si.Allocation{{
		AllocationKey: long, ApplicationID: "app", NodeID: long,
		AllocationTags:   map[string]string{"kubernetes.io/label/" + long: long, "a": "b"},
		ResourcePerAlloc: &si.Resource{Resources: map[string]*si.Quantity{long: {Value: -1}, "memory": {Value: 1 << 40}}},
		Priority:         -2147483648, PreemptionPolicy: &si.PreemptionPolicy{},
	}}}
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := appendAllocationRequest(nil, m)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("encoder (%v)\n % x\nproto\n % x", err, got, want)
	}
}

func benchAllocation(app, key string, memory, vcore int64) *si.Allocation {
	return &si.Allocation{
		AllocationKey: key, ApplicationID: app,
		ResourcePerAlloc: &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: memory}, "vcore": {Value: vcore}}},
		AllocationTags: map[string]string{"kubernetes.io/meta/namespace": "default", "kubernetes.io/meta/podName": key,
			"creationTime": "1700000000"},
		PreemptionPolicy: &si.PreemptionPolicy{AllowPreemptSelf: true, AllowPreemptOther: true},
	}
}

// BenchmarkEncodeAllocationRequest: 1,000 pods shaped like the k8shim's.
func BenchmarkEncodeAllocationRequest(b *testing.B) {
	m := &si.AllocationRequest{RmID: "rm-bench"}
	for i := 0; i < 1000; i++ {
		m.Allocations = append(m.Allocations, benchAllocation("app-a", fmt.Sprintf("app-a-%d", i), 10, 1))
	}
	b.Run("encoder", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte // recycled, as UpdateAllocation does
		for i := 0; i < b.N; i++ {
			var err error
			if buf, err = encodeAllocationRequest(buf, m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proto.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := proto.Marshal(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A request of many alike allocations (the shim's or a bulk submitter's)
// is encoded into a buffer sized once from its first allocation, not
// doubled step by step; the bytes are proto's.
func TestEncodeAlikeAllocationsSizesTheBufferOnce(t *testing.T) {
	req := &si.AllocationRequest{RmID: "rm"}
	for j := 0; j < 3000; j++ {
		req.Allocations = append(req.Allocations, &si.Allocation{
			AllocationKey: fmt.Sprintf("pod-%d", j), ApplicationID: "app",
			ResourcePerAlloc: &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: 1 << 30}, "vcore": {Value: 1000}}}})
	}
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := encodeAllocationRequest(nil, req)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("encoder: %v; equal to proto's: %v", err, bytes.Equal(got, want))
	}
	if cap(got) > len(got)*5/4 {
		t.Errorf("buffer of %d bytes for %d", cap(got), len(got))
	}
	// From an empty buffer: the first allocation's few appends and the one
	// reservation (doubling alone took ~25).
	if n := testing.AllocsPerRun(3, func() { _, _ = encodeAllocationRequest(nil, req) }); n > 8 {
		t.Errorf("%v allocations to encode %d alike allocations", n, len(req.Allocations))
	}
}
