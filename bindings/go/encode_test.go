package sicore

import (
	"bytes"
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
	"github.com/golang/protobuf/proto"
)

func randAsk(rng *rand.Rand) *si.AllocationAsk {
	if rng.Intn(50) == 0 {
		return nil // proto.Marshal refuses a nil element
	}
	return &si.AllocationAsk{
		AllocationKey:                randString(rng),
		ApplicationID:                randString(rng),
		PartitionName:                randString(rng),
		ResourceAsk:                  randResource(rng),
		MaxAllocations:               int32(randInt64(rng)),
		Priority:                     randPriority(rng),
		ExecutionTimeoutMilliSeconds: randInt64(rng),
		Tags:                         randTags(rng),
		TaskGroupName:                randString(rng),
		Placeholder:                  rng.Intn(2) == 0,
	}
}

func randAllocationRequest(rng *rand.Rand) *si.AllocationRequest {
	m := &si.AllocationRequest{RmID: randString(rng)}
	for i, n := 0, rng.Intn(5); i < n; i++ {
		m.Asks = append(m.Asks, randAsk(rng))
	}
	if rng.Intn(3) == 0 {
		m.Releases = &si.AllocationReleasesRequest{}
		for i, n := 0, rng.Intn(3); i < n; i++ {
			m.Releases.AllocationsToRelease = append(m.Releases.AllocationsToRelease, &si.AllocationRelease{
				PartitionName: randString(rng), ApplicationID: randString(rng), UUID: randString(rng),
				TerminationType: si.TerminationType(rng.Intn(5) - 1), Message: randString(rng)})
		}
		for i, n := 0, rng.Intn(3); i < n; i++ {
			m.Releases.AllocationAsksToRelease = append(m.Releases.AllocationAsksToRelease, &si.AllocationAskRelease{
				PartitionName: randString(rng), ApplicationID: randString(rng), Allocationkey: randString(rng),
				TerminationType: si.TerminationType(rng.Intn(4)), Message: randString(rng)})
		}
	}
	switch rng.Intn(40) {
	case 0:
		m.RmID = "\xff" // invalid UTF-8: proto.Marshal reports it
	case 1:
		m.XXX_unrecognized = []byte{0xf8, 0x01, 0x01} // field 31, varint 1
	}
	return m
}

// TestEncodeAllocationRequestMatchesProto: the encoder writes what
// proto.Marshal writes in deterministic mode, byte for byte, and fails
// where proto.Marshal fails.
func TestEncodeAllocationRequestMatchesProto(t *testing.T) {
	rng := rand.New(rand.NewSource(15))
	fast := 0
	for i := 0; i < 5000; i++ {
		m := randAllocationRequest(rng)
		var pb proto.Buffer
		pb.SetDeterministic(true)
		wantErr := pb.Marshal(m)
		got, err := encodeAllocationRequest(make([]byte, 7), m) // a dirty buffer
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%d: encoder error %v, proto.Marshal error %v, for %v", i, err, wantErr, m)
		}
		if err != nil {
			continue
		}
		if _, err := appendAllocationRequest(nil, m); err == nil {
			fast++
			if !bytes.Equal(got, pb.Bytes()) {
				t.Fatalf("%d: %v\n encoder % x\n proto   % x", i, m, got, pb.Bytes())
			}
			continue
		}
		// proto.Marshal's own (non-deterministic) output: compare decoded.
		a, b := new(si.AllocationRequest), new(si.AllocationRequest)
		if err := proto.Unmarshal(got, a); err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(pb.Bytes(), b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%d: decoded %v, want %v", i, a, b)
		}
	}
	if fast < 3000 {
		t.Errorf("the encoder took only %d of 5000 requests itself", fast)
	}
}

// BenchmarkEncodeAllocationRequest: 1,000 asks shaped like the scheduling
// benchmark's.
func BenchmarkEncodeAllocationRequest(b *testing.B) {
	m := &si.AllocationRequest{RmID: "rm-bench"}
	for i := 0; i < 1000; i++ {
		m.Asks = append(m.Asks, ask("app-a", fmt.Sprintf("app-a-%d", i), 10, 1))
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

// A request of many alike asks is encoded into a buffer sized once from
// its first ask, not doubled step by step; the bytes are proto's.
func TestEncodeAlikeAsksSizesTheBufferOnce(t *testing.T) {
	req := &si.AllocationRequest{RmID: "rm"}
	for j := 0; j < 3000; j++ {
		req.Asks = append(req.Asks, &si.AllocationAsk{
			AllocationKey: fmt.Sprintf("pod-%d", j), ApplicationID: "app", MaxAllocations: 1,
			ResourceAsk: &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: 1 << 30}, "vcore": {Value: 1000}}}})
	}
	got, err := encodeAllocationRequest(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	back := new(si.AllocationRequest)
	if err := proto.Unmarshal(got, back); err != nil || !proto.Equal(back, req) {
		t.Fatalf("decoded back: %v; equal: %v", err, proto.Equal(back, req))
	}
	if cap(got) > len(got)*5/4 {
		t.Errorf("buffer of %d bytes for %d", cap(got), len(got))
	}
	if n := testing.AllocsPerRun(3, func() { _, _ = encodeAllocationRequest(nil, req) }); n > 8 {
		t.Errorf("%v allocations to encode %d alike asks", n, len(req.Asks))
	}
}

// roomForAlike reserves for the rest of a request, with slack for keys
// that grow, but never past maxAlikeRoom however large the first entry.
func TestRoomForAlikeIsBounded(t *testing.T) {
	if b := roomForAlike(nil, 100, 0); b != nil {
		t.Errorf("nothing more to come: %d bytes reserved", cap(b))
	}
	if b := roomForAlike(nil, 100, 1000); cap(b) < 100*1000 || cap(b) > 120*1000 {
		t.Errorf("1000 more of 100 bytes: %d reserved", cap(b))
	}
	if b := roomForAlike(nil, 1<<20, 1<<20); cap(b) > maxAlikeRoom*9/8 {
		t.Errorf("a huge first entry reserved %d bytes", cap(b))
	}
	b := make([]byte, 3, 1<<20)
	if got := roomForAlike(b, 10, 10); &got[0] != &b[0] {
		t.Error("a buffer with room was reallocated")
	}
}
