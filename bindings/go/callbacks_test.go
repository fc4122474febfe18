package sicore

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
	"github.com/golang/protobuf/proto"
	"google.golang.org/protobuf/encoding/protowire"
)

// captureHandler is a slog.Handler that keeps every record.
type captureHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *captureHandler) WithGroup(string) slog.Handler      { return h }

// find returns the first record whose message and attributes contain all
// the fragments.
func (h *captureHandler) find(fragments ...string) (slog.Record, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		var text strings.Builder
		text.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool {
			text.WriteString(" " + a.Key + "=" + a.Value.String())
			return true
		})
		ok := true
		for _, f := range fragments {
			ok = ok && strings.Contains(text.String(), f)
		}
		if ok {
			return r, true
		}
	}
	return slog.Record{}, false
}

// TestCallbackErrorsAndPanics checks that a Go error reaches the library
// with its message, and that a panic is recovered, logged and reported
// as an error while the scheduler keeps working.
func TestCallbackErrorsAndPanics(t *testing.T) {
	libLog := &captureHandler{}
	SetLogger(slog.New(libLog), slog.LevelDebug)
	defer SetLogger(nil, slog.LevelInfo)
	bindingLog := &captureHandler{}
	s := newTestScheduler(t, WithLogger(slog.New(bindingLog)))
	rm := newFakeRM()
	const rmID = "rm-faults"

	// Predicates refuse node-1, so every allocation lands on node-2, and
	// the refusal reason reaches the library.
	rm.onPredicates = func(a *si.PredicatesArgs) error {
		if a.NodeID == "node-1" {
			return errors.New("node-1 is tainted")
		}
		return nil
	}
	var panicked sync.Once
	rm.onAllocation = func(r *si.AllocationResponse) error {
		var p bool
		panicked.Do(func() { p = true })
		if p {
			panic("boom in UpdateAllocation")
		}
		return nil
	}
	rm.onNode = func(*si.NodeResponse) error { return errors.New("node bookkeeping failed") }
	register(t, s, rmID, rm)
	if err := s.UpdateNode(nodeRequest(rmID, 100000, 1000, "node-1", "node-2")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the UpdateNode error logged by the library", func() bool {
		_, ok := libLog.find("node bookkeeping failed")
		return ok
	})
	if err := s.UpdateApplication(appRequest(rmID, "app-1", "root.a")); err != nil {
		t.Fatal(err)
	}
	req := &si.AllocationRequest{RmID: rmID}
	for _, k := range []string{"a", "b", "c"} {
		req.Asks = append(req.Asks, ask("app-1", k, 10, 1))
	}
	if err := s.UpdateAllocation(req); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the panic logged by the binding", func() bool {
		_, ok := bindingLog.find("recovered a panic", "UpdateAllocation", "boom in UpdateAllocation")
		return ok
	})
	waitFor(t, "the panic reported to the library as an error", func() bool {
		_, ok := libLog.find("panic in ResourceManagerCallback.UpdateAllocation: boom in UpdateAllocation")
		return ok
	})
	// The scheduler keeps going after the panic.
	if err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{ask("app-1", "d", 10, 1)}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an allocation after the panic", func() (ok bool) {
		rm.read(func() {
			for _, a := range rm.allocations {
				ok = ok || a.AllocationKey == "d"
			}
		})
		return ok
	})
	rm.read(func() {
		for _, a := range rm.allocations {
			if a.NodeID != "node-2" {
				t.Errorf("allocation %s on %s although Predicates refused it", a.AllocationKey, a.NodeID)
			}
		}
		if rm.predicateCalls == 0 {
			t.Errorf("Predicates was never called")
		}
	})
	if r, ok := libLog.find(); ok {
		var target string
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "target" {
				target = a.Value.String()
			}
			return true
		})
		if target == "" {
			t.Errorf("library record %q has no target attribute", r.Message)
		}
	}
}

// TestRunStatus drives the Go half of a status callback directly: success,
// an error, an error with no text, a panic and an undecodable message.
func TestRunStatus(t *testing.T) {
	s := newTestScheduler(t, WithLogger(slog.New(&captureHandler{})))
	r := newRegistration(s, newFakeRM())
	defer r.free()
	msg, _ := proto.Marshal(&si.NodeResponse{Accepted: []*si.AcceptedNode{{NodeID: "n"}}})
	cases := []struct {
		name   string
		msg    []byte
		call   func(api.ResourceManagerCallback, *si.NodeResponse) error
		rc     int32
		reason string
	}{
		{"ok", msg, func(api.ResourceManagerCallback, *si.NodeResponse) error { return nil }, 0, ""},
		{"error", msg, func(api.ResourceManagerCallback, *si.NodeResponse) error { return errors.New("no room") }, 1, "no room"},
		{"empty error", msg, func(api.ResourceManagerCallback, *si.NodeResponse) error { return errors.New("") }, 1,
			"ResourceManagerCallback.UpdateNode returned an error"},
		{"panic", msg, func(api.ResourceManagerCallback, *si.NodeResponse) error { panic(errors.New("nil map")) }, 1,
			"panic in ResourceManagerCallback.UpdateNode: nil map"},
		{"garbage", []byte{0xff, 0xff}, func(api.ResourceManagerCallback, *si.NodeResponse) error { return nil }, 1,
			"cannot decode the UpdateNode message"},
	}
	for _, c := range cases {
		rc, reason := runStatus(uintptr(r.handle), "UpdateNode", c.msg, unmarshal[si.NodeResponse], c.call)
		if rc != c.rc || !strings.Contains(string(reason), c.reason) {
			t.Errorf("%s: got (%d, %q), want (%d, %q)", c.name, rc, reason, c.rc, c.reason)
		}
	}
}

func TestDecodeEventRecords(t *testing.T) {
	want := []*si.EventRecord{
		{Type: si.EventRecord_REQUEST, ObjectID: "ask-1", GroupID: "app-1", Reason: "r1", Message: "m1", TimestampNano: 1},
		{Type: si.EventRecord_NODE, ObjectID: "node-1", Reason: "r2", TimestampNano: 2},
	}
	var b []byte
	for _, e := range want {
		eb, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, eb)
	}
	// An unknown field is skipped.
	b = protowire.AppendTag(b, 7, protowire.VarintType)
	b = protowire.AppendVarint(b, 42)
	got, err := decodeEventRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("event %d: got %v, want %v", i, got[i], want[i])
		}
	}
	if _, err := decodeEventRecords([]byte{0x0a, 0x05, 0x01}); err == nil {
		t.Errorf("a truncated batch decoded without error")
	}
}

// configRM answers UpdateConfiguration in different ways.
type configRM struct {
	*fakeRM
	answer func(*si.UpdateConfigurationRequest) *si.UpdateConfigurationResponse
}

func (c configRM) UpdateConfiguration(r *si.UpdateConfigurationRequest) *si.UpdateConfigurationResponse {
	return c.answer(r)
}

func TestConfigurationAnswer(t *testing.T) {
	s := newTestScheduler(t, WithLogger(slog.New(&captureHandler{})))
	req, _ := proto.Marshal(&si.UpdateConfigurationRequest{Configs: "partitions: []"})
	cases := []struct {
		name   string
		answer func(*si.UpdateConfigurationRequest) *si.UpdateConfigurationResponse
		want   *si.UpdateConfigurationResponse
	}{
		{"success", func(r *si.UpdateConfigurationRequest) *si.UpdateConfigurationResponse {
			return &si.UpdateConfigurationResponse{Success: true, OldConfig: "old:" + r.Configs}
		}, &si.UpdateConfigurationResponse{Success: true, OldConfig: "old:partitions: []"}},
		{"nil", func(*si.UpdateConfigurationRequest) *si.UpdateConfigurationResponse { return nil },
			&si.UpdateConfigurationResponse{Reason: "ResourceManagerCallback.UpdateConfiguration returned nil"}},
		{"panic", func(*si.UpdateConfigurationRequest) *si.UpdateConfigurationResponse { panic("no config map") },
			&si.UpdateConfigurationResponse{Reason: "panic in ResourceManagerCallback.UpdateConfiguration: no config map"}},
	}
	for _, c := range cases {
		r := newRegistration(s, configRM{newFakeRM(), c.answer})
		got := new(si.UpdateConfigurationResponse)
		if err := proto.Unmarshal(configurationAnswer(uintptr(r.handle), req), got); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !proto.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
		r.free()
	}
}

// TestRegistrationsReleased checks that the library calls release for
// every callback table it was given: on re-registration, right away on a
// refused registration (bad configuration, missing rmID, malformed
// request) and at Close, so that Close never has to clean up after it.
func TestRegistrationsReleased(t *testing.T) {
	before, orphansBefore := liveHandles.Load(), unreleased.Load()
	s, err := New(WithPolicyConfig("broken", "partitions: 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	rm := newFakeRM()
	register(t, s, "rm", rm)
	register(t, s, "rm", rm) // re-registration drops the first table
	waitFor(t, "the first table released", func() bool { return liveHandles.Load() == before+1 })
	_, err = s.RegisterResourceManager(&si.RegisterResourceManagerRequest{RmID: "rm2", PolicyGroup: "broken"}, rm)
	if err == nil {
		t.Fatal("registration with a broken configuration succeeded")
	}
	_, err = s.RegisterResourceManager(&si.RegisterResourceManagerRequest{RmID: "", PolicyGroup: "queues"}, rm)
	if err == nil {
		t.Fatal("registration without rmID succeeded")
	}
	if _, err = s.registerEncoded([]byte{0xff, 0xff}, rm); err == nil {
		t.Fatal("registration with a malformed request succeeded")
	}
	// A refused registration's table is released right away.
	waitFor(t, "the refused tables released", func() bool { return liveHandles.Load() == before+1 })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := liveHandles.Load(); n != before {
		t.Errorf("%d handles left after Close, want %d", n, before)
	}
	if n := unreleased.Load() - orphansBefore; n != 0 {
		t.Errorf("the library did not call release for %d callback tables", n)
	}
}

// TestHandlesPastTheGoHeap: a process may register any number of times.
// A handle is the user_data of a callback table that goes through a cgo
// call, and the 192nd registration's handle once read as an address in
// Go's first heap arena, so cgo's pointer check panicked in
// RegisterResourceManager. The registrations here take the sequence past
// that point, and the last one still schedules.
func TestHandlesPastTheGoHeap(t *testing.T) {
	handles.mu.Lock()
	handles.seq = max(handles.seq, 0xbd) // earlier tests may have gone past it
	handles.mu.Unlock()
	s := newTestScheduler(t)
	rm := newFakeRM()
	for i := 0; i < 6; i++ {
		register(t, s, "rm-many", rm) // each replaces the one before
	}
	setUp(t, s, "rm-many", rm, "app-1", "root.a", "node-1")
	err := s.UpdateAllocation(&si.AllocationRequest{RmID: "rm-many",
		Asks: []*si.AllocationAsk{ask("app-1", "ask-1", 10, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the allocation", func() bool { return rm.allocationCount() == 1 })
}

func TestSetLoggerLevels(t *testing.T) {
	for _, c := range []struct {
		level slog.Level
		want  int32
	}{{slog.LevelError, 1}, {slog.LevelWarn + 1, 1}, {slog.LevelWarn, 2}, {slog.LevelInfo, 3}, {slog.LevelDebug, 4}, {LevelTrace, 5}, {LevelTrace - 3, 5}} {
		if got := libraryLevel(c.level); got != c.want {
			t.Errorf("libraryLevel(%v) = %d, want %d", c.level, got, c.want)
		}
		if back := slogLevel(c.want); libraryLevel(back) != c.want {
			t.Errorf("slogLevel(%d) = %v does not map back", c.want, back)
		}
	}
}

// A released registration's handle finds nothing, even once its slot holds
// a new registration, and a callback with it reports an error instead of
// reaching the wrong RM.
func TestStaleHandle(t *testing.T) {
	s := newTestScheduler(t, WithLogger(slog.New(&captureHandler{})))
	old := newRegistration(s, newFakeRM())
	stale := old.handle
	old.free()
	next := newRegistration(s, newFakeRM())
	defer next.free()
	if uint32(next.handle) != uint32(stale) {
		t.Logf("slot not reused (%#x, %#x); the check below still holds", next.handle, stale)
	}
	if next.handle == stale {
		t.Fatalf("a new registration got the released handle %#x", stale)
	}
	if lookup(uintptr(next.handle)) != next {
		t.Fatal("lookup does not find the live registration")
	}
	rc, reason := runStatus(uintptr(stale), "UpdateNode", nil, unmarshal[si.NodeResponse],
		func(api.ResourceManagerCallback, *si.NodeResponse) error { return nil })
	if rc != 1 || !strings.Contains(string(reason), "unknown user_data") {
		t.Errorf("stale handle: got (%d, %q), want an error naming the unknown user_data", rc, reason)
	}
}
