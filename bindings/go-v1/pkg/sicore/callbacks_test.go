package sicore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
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

// find reports whether a record's message and attributes contain all the
// fragments.
func (h *captureHandler) find(fragments ...string) bool {
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
			return true
		}
	}
	return false
}

// hookRM is a shimRM whose callbacks run a hook first; a hook's error
// (or panic, or Goexit) is the callback's.
type hookRM struct {
	*shimRM
	onAllocation func(*si.AllocationResponse) error
	onNode       func(*si.NodeResponse) error
	onPredicates func(*si.PredicatesArgs) error
	onPreempt    func(*si.PreemptionPredicatesArgs) *si.PreemptionPredicatesResponse
	onDump       func() (string, error)
}

func (h *hookRM) UpdateAllocation(r *si.AllocationResponse) error {
	if h.onAllocation != nil {
		if err := h.onAllocation(r); err != nil {
			return err
		}
	}
	return h.shimRM.UpdateAllocation(r)
}

func (h *hookRM) UpdateNode(r *si.NodeResponse) error {
	if h.onNode != nil {
		if err := h.onNode(r); err != nil {
			return err
		}
	}
	return h.shimRM.UpdateNode(r)
}

func (h *hookRM) Predicates(a *si.PredicatesArgs) error {
	if h.onPredicates != nil {
		if err := h.onPredicates(a); err != nil {
			return err
		}
	}
	return h.shimRM.Predicates(a)
}

func (h *hookRM) PreemptionPredicates(a *si.PreemptionPredicatesArgs) *si.PreemptionPredicatesResponse {
	if h.onPreempt != nil {
		return h.onPreempt(a)
	}
	return h.shimRM.PreemptionPredicates(a)
}

func (h *hookRM) GetStateDump() (string, error) {
	if h.onDump != nil {
		return h.onDump()
	}
	return h.shimRM.GetStateDump()
}

// plainRM implements api.ResourceManagerCallback but not the state dump
// plugin.
type plainRM struct{ api.ResourceManagerCallback }

// startHooked registers h's RM and its nodes the k8shim's way.
func startHooked(t *testing.T, h *hookRM, nodes ...string) {
	t.Helper()
	h.shimRM.cb = h
	if err := h.register(shimQueues); err != nil {
		t.Fatalf("RegisterResourceManager: %v", err)
	}
	h.registerNodes(100000, nodes...)
	h.enableNodes(nodes...)
	h.addApp("app-1", "root.a", nil)
	if ok, reason := h.waitApp("app-1"); !ok {
		t.Fatalf("app-1 rejected: %s", reason)
	}
}

// TestCallbackErrorsAndPanics: a Predicates error refuses the node and
// reaches the library with its message; a panic in UpdateAllocation is
// recovered, logged and reported as an error, and scheduling goes on.
func TestCallbackErrorsAndPanics(t *testing.T) {
	libLog := &captureHandler{}
	SetLogger(slog.New(libLog), slog.LevelDebug)
	defer SetLogger(nil, slog.LevelInfo)
	bindingLog := &captureHandler{}
	s := newTestScheduler(t, WithLogger(slog.New(bindingLog)))
	h := &hookRM{shimRM: newShimRM(t, s, "rm-faults", 0)}
	h.onPredicates = func(a *si.PredicatesArgs) error {
		if a.NodeID == "node-1" {
			return errors.New("node-1 is tainted")
		}
		return nil
	}
	var panicked sync.Once
	h.onAllocation = func(r *si.AllocationResponse) error {
		if len(r.New) > 0 {
			p := false
			panicked.Do(func() { p = true })
			if p {
				panic("boom in UpdateAllocation")
			}
		}
		return nil
	}
	startHooked(t, h, "node-1", "node-2")
	h.submit(&shimPod{key: "a", app: "app-1", memory: 10})
	waitFor(t, "the panic logged by the binding", func() bool {
		return bindingLog.find("recovered a panic", "UpdateAllocation", "boom in UpdateAllocation")
	})
	waitFor(t, "the panic reported to the library", func() bool {
		return libLog.find("panic in ResourceManagerCallback.UpdateAllocation: boom in UpdateAllocation")
	})
	h.submit(&shimPod{key: "b", app: "app-1", memory: 10})
	waitFor(t, "b placed after the panic", func() bool { return h.nodeOf("b") != "" })
	if n := h.nodeOf("b"); n != "node-2" {
		t.Errorf("b on %s although Predicates refused node-1", n)
	}
	h.checkClean()
}

// TestGoexitInCallbacks: runtime.Goexit in a callback (t.FailNow in a test
// RM) is reported like a panic and the scheduler goes on.
func TestGoexitInCallbacks(t *testing.T) {
	libLog := &captureHandler{}
	SetLogger(slog.New(libLog), slog.LevelDebug)
	defer SetLogger(nil, slog.LevelInfo)
	bindingLog := &captureHandler{}
	s := newTestScheduler(t, WithLogger(slog.New(bindingLog)), WithGoexitGuard(true))
	h := &hookRM{shimRM: newShimRM(t, s, "rm-goexit", 0)}
	h.onPredicates = func(a *si.PredicatesArgs) error {
		if a.NodeID == "node-1" {
			runtime.Goexit()
		}
		return nil
	}
	startHooked(t, h, "node-1", "node-2")
	h.submit(&shimPod{key: "a", app: "app-1", memory: 10})
	waitFor(t, "a placed", func() bool { return h.nodeOf("a") != "" })
	if n := h.nodeOf("a"); n != "node-2" {
		t.Errorf("a on %s although Predicates ended in Goexit there", n)
	}
	waitFor(t, "the Goexit logged by the binding", func() bool {
		return bindingLog.find("called runtime.Goexit", "method=Predicates")
	})
	if _, err := s.StateDump(); err != nil {
		t.Fatalf("StateDump after the Goexit: %v", err)
	}
	h.checkClean()
}

// TestAnswerCallbacks drives the Go halves of the two answer callbacks,
// which the core does not call yet (PreemptionPredicates) or may not
// (GetStateDump): normal answers, nil, errors, panics, Goexit, bad input.
func TestAnswerCallbacks(t *testing.T) {
	s := newTestScheduler(t, WithLogger(slog.New(&captureHandler{})), WithGoexitGuard(true))
	h := &hookRM{shimRM: newShimRM(t, s, "rm-answers", 0)}
	r := newRegistration(s, h)
	defer r.free()
	args, _ := proto.Marshal(&si.PreemptionPredicatesArgs{AllocationKey: "pod", NodeID: "node-1",
		PreemptAllocationKeys: []string{"v1", "v2", "v3"}, StartIndex: 1})
	answer := func(msg []byte) *si.PreemptionPredicatesResponse {
		t.Helper()
		got := new(si.PreemptionPredicatesResponse)
		if err := proto.Unmarshal(preemptionAnswer(uintptr(r.handle), msg), got); err != nil {
			t.Fatalf("the answer does not decode: %v", err)
		}
		return got
	}
	var seen *si.PreemptionPredicatesArgs
	h.onPreempt = func(a *si.PreemptionPredicatesArgs) *si.PreemptionPredicatesResponse {
		seen = a
		return &si.PreemptionPredicatesResponse{Success: true, Index: 2}
	}
	if got := answer(args); !got.Success || got.Index != 2 {
		t.Errorf("answer %v, want success at index 2", got)
	}
	if seen.GetAllocationKey() != "pod" || seen.GetNodeID() != "node-1" || len(seen.GetPreemptAllocationKeys()) != 3 || seen.GetStartIndex() != 1 {
		t.Errorf("the RM saw %v", seen)
	}
	for name, hook := range map[string]func(*si.PreemptionPredicatesArgs) *si.PreemptionPredicatesResponse{
		"nil":    func(*si.PreemptionPredicatesArgs) *si.PreemptionPredicatesResponse { return nil },
		"panic":  func(*si.PreemptionPredicatesArgs) *si.PreemptionPredicatesResponse { panic("boom") },
		"goexit": func(*si.PreemptionPredicatesArgs) *si.PreemptionPredicatesResponse { runtime.Goexit(); return nil },
	} {
		h.onPreempt = hook
		if got := answer(args); got.Success || got.Index != -1 {
			t.Errorf("%s: answer %v, want failure at index -1", name, got)
		}
	}
	if got := answer([]byte{0xff}); got.Success || got.Index != -1 {
		t.Errorf("undecodable args: answer %v, want failure at index -1", got)
	}

	for _, c := range []struct {
		name string
		dump func() (string, error)
		want string
		ok   bool
	}{
		{"json", func() (string, error) { return `{"cache":1}`, nil }, `{"cache":1}`, true},
		{"error", func() (string, error) { return "", errors.New("no cache") }, "", false},
		{"not json", func() (string, error) { return "cache: 1", nil }, "", false},
		{"panic", func() (string, error) { panic("boom") }, "", false},
	} {
		h.onDump = c.dump
		got, ok := stateDumpAnswer(uintptr(r.handle))
		if ok != c.ok || string(got) != c.want {
			t.Errorf("state dump %s: (%q, %v), want (%q, %v)", c.name, got, ok, c.want, c.ok)
		}
	}
	plain := newRegistration(s, plainRM{h})
	defer plain.free()
	if got, ok := stateDumpAnswer(uintptr(plain.handle)); ok {
		t.Errorf("an RM without the plugin answered %q", got)
	}
}

// TestRunStatus drives the Go half of a status callback directly.
func TestRunStatus(t *testing.T) {
	s := newTestScheduler(t, WithLogger(slog.New(&captureHandler{})))
	r := newRegistration(s, newShimRM(t, s, "rm-status", 0))
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
		{Type: si.EventRecord_REQUEST, ObjectID: "pod-1", ReferenceID: "app-1", Message: "no room",
			EventChangeType: si.EventRecord_NONE, EventChangeDetail: si.EventRecord_DETAILS_NONE, TimestampNano: 5},
		{Type: si.EventRecord_NODE, ObjectID: "node-1", EventChangeType: si.EventRecord_REMOVE,
			EventChangeDetail: si.EventRecord_NODE_DECOMISSION, Resource: quantity(3)},
	}
	var b []byte
	for _, e := range want {
		m, _ := proto.Marshal(e)
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	b = protowire.AppendTag(b, 7, protowire.VarintType) // a later field: skipped
	b = protowire.AppendVarint(b, 1)
	got, err := decodeEventRecords(b)
	if err != nil || len(got) != len(want) {
		t.Fatalf("got %v, %v", got, err)
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("event %d: %v, want %v", i, got[i], want[i])
		}
	}
	if _, err := decodeEventRecords([]byte{0x0a, 0x05, 0x01}); err == nil {
		t.Errorf("a truncated batch decoded")
	}
}

// TestReentrantCalls: a callback may call UpdateAllocation; the waiting
// calls fail with ErrWouldDeadlock from inside a callback, and the
// scheduler survives a refused Close.
func TestReentrantCalls(t *testing.T) {
	s := newTestScheduler(t)
	h := &hookRM{shimRM: newShimRM(t, s, "rm-reentrant", 0)}
	const chain = 20
	var syncErrs []error
	var once sync.Once
	h.onAllocation = func(r *si.AllocationResponse) error {
		if len(r.New) == 0 {
			return nil
		}
		once.Do(func() {
			_, err := s.RegisterResourceManager(&si.RegisterResourceManagerRequest{RmID: "rm-reentrant"}, h)
			_, err2 := s.StateDump()
			syncErrs = append(syncErrs, err, s.UpdateConfiguration(&si.UpdateConfigurationRequest{RmID: "rm-reentrant"}), err2, s.Close())
		})
		for _, a := range r.New {
			var n int
			if _, err := fmt.Sscanf(a.AllocationKey, "chain-%d", &n); err != nil || n+1 >= chain {
				continue
			}
			next := &shimPod{key: fmt.Sprintf("chain-%d", n+1), app: "app-1", memory: 10}
			h.cacheLock.Lock()
			h.pods[next.key] = next
			h.cacheLock.Unlock()
			// From inside the callback (hookRM runs before shimRM takes
			// the context lock), straight to the binding.
			err := s.UpdateAllocation(&si.AllocationRequest{RmID: "rm-reentrant", Allocations: []*si.Allocation{podAllocation(next)}})
			if err != nil {
				return fmt.Errorf("re-entrant UpdateAllocation: %w", err)
			}
		}
		return nil
	}
	startHooked(t, h, "node-1")
	h.submit(&shimPod{key: "chain-0", app: "app-1", memory: 10})
	waitFor(t, "the whole chain placed", func() bool { return h.placedCount(chainKeys(chain)...) == chain })
	if len(syncErrs) != 4 {
		t.Fatalf("got %d results of waiting calls, want 4", len(syncErrs))
	}
	for i, err := range syncErrs {
		if !errors.Is(err, ErrWouldDeadlock) {
			t.Errorf("waiting call %d from a callback: %v, want ErrWouldDeadlock", i, err)
		}
	}
	if _, err := s.StateDump(); err != nil {
		t.Errorf("StateDump after the refused Close: %v", err)
	}
	h.checkClean()
}

func chainKeys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("chain-%d", i)
	}
	return out
}

// TestConcurrentUpdateAllocation: many goroutines submit pods at once
// while the callbacks deliver, under -race.
func TestConcurrentUpdateAllocation(t *testing.T) {
	s := newTestScheduler(t)
	rm := startShim(t, s, "rm-conc", 0, 100000, nodeNames(4))
	rm.addApp("app-1", "root.a", nil)
	if ok, reason := rm.waitApp("app-1"); !ok {
		t.Fatalf("app-1 rejected: %s", reason)
	}
	const goroutines, perGoroutine = 8, 30
	var wg sync.WaitGroup
	var all []string
	for g := 0; g < goroutines; g++ {
		for i := 0; i < perGoroutine; i++ {
			all = append(all, fmt.Sprintf("pod-%d-%d", g, i))
		}
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < perGoroutine; i++ {
				rm.submit(&shimPod{key: fmt.Sprintf("pod-%d-%d", g, i), app: "app-1", memory: 10})
			}
		}(g)
	}
	wg.Wait()
	waitFor(t, "every pod placed", func() bool { return rm.placedCount(all...) == len(all) })
	rm.checkClean()
}

// TestRegistrationsReleased: the library releases every callback table
// (re-registration, Close), so no handle outlives the scheduler.
func TestRegistrationsReleased(t *testing.T) {
	before := liveHandles.Load()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		rm := newShimRM(t, s, "rm-release", 0)
		if err := rm.register(""); err != nil { // empty: the built-in default
			t.Fatalf("registration %d: %v", i, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := liveHandles.Load(); n != before {
		t.Errorf("%d handles after Close, want %d", n, before)
	}
	if n := unreleased.Load(); n != 0 {
		t.Errorf("%d registrations never released by the library", n)
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
	for i := 0; i < 5; i++ {
		if err := newShimRM(t, s, "rm-many", 0).register(""); err != nil {
			t.Fatalf("registration %d: %v", i, err)
		}
	}
	rm := startShim(t, s, "rm-many", 0, 1000, []string{"node-0"})
	rm.addApp("app-1", "root.a", nil)
	if ok, reason := rm.waitApp("app-1"); !ok {
		t.Fatalf("app-1 rejected: %s", reason)
	}
	rm.submit(&shimPod{key: "pod-0", app: "app-1", memory: 100})
	waitFor(t, "pod-0 placed", func() bool { return rm.placedCount("pod-0") == 1 })
}

// TestLibraryMessagesTakeTheFastPath: every AllocationResponse and
// PredicatesArgs the library sends for pods with tags, a priority, a
// preemption policy and non-ASCII names takes the hand-written decoder,
// and the RM sees the fields it sent.
func TestLibraryMessagesTakeTheFastPath(t *testing.T) {
	s := newTestScheduler(t)
	rm := startShim(t, s, "rm-fast", 0, 100000, nodeNames(2))
	rm.addApp("app-é", "root.a", nil)
	if ok, reason := rm.waitApp("app-é"); !ok {
		t.Fatalf("app rejected: %s", reason)
	}
	before := decodeFallbacks.Load()
	var pods []*shimPod
	var keys []string
	for i := 0; i < 20; i++ {
		p := &shimPod{key: fmt.Sprintf("pod-%d-ü", i), app: "app-é", memory: 100}
		pods = append(pods, p)
		keys = append(keys, p.key)
	}
	rm.submit(pods...)
	waitFor(t, "20 pods placed", func() bool { return rm.placedCount(keys...) == 20 })
	for _, k := range keys[:5] {
		rm.deletePod(k, si.TerminationType_STOPPED_BY_RM)
	}
	waitFor(t, "5 releases", func() bool { return len(rm.releasedKeys(si.TerminationType_STOPPED_BY_RM)) == 5 })
	if n := decodeFallbacks.Load() - before; n != 0 {
		t.Errorf("%d library messages fell back to proto.Unmarshal", n)
	}
	rm.mu.Lock()
	for _, a := range rm.newAllocs {
		if a.ApplicationID != "app-é" || !strings.HasSuffix(a.AllocationKey, "-ü") || a.NodeID == "" {
			t.Errorf("allocation %v lacks its key, application or node", a)
		}
	}
	if rm.predicateCalls < 20 {
		t.Errorf("%d Predicates calls, want at least 20", rm.predicateCalls)
	}
	rm.mu.Unlock()
	rm.checkClean()
}
