package sicore

import (
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
	"github.com/golang/protobuf/proto"
)

// TestGoexitInCallbacks has a scheduler's callbacks call runtime.Goexit,
// as t.FailNow or t.Fatal do when a test RM calls them (issue 24, defect
// 11). On a library thread that used to end the process; now each is
// reported like a panic (Predicates: the node is skipped) and the
// scheduler goes on. runtime.Goexit itself, rather than t.FailNow on this
// test's t, so that the test can pass. The guard is the default in test
// binaries; the test asks for it so that it also holds under
// SICORE_GO_GOEXIT_GUARD=off.
func TestGoexitInCallbacks(t *testing.T) {
	libLog := &captureHandler{}
	SetLogger(slog.New(libLog), slog.LevelDebug)
	defer SetLogger(nil, slog.LevelInfo)
	bindingLog := &captureHandler{}
	s := newTestScheduler(t, WithLogger(slog.New(bindingLog)), WithGoexitGuard(true))
	rm := newFakeRM()
	const rmID = "rm-goexit"
	rm.onPredicates = func(a *si.PredicatesArgs) error {
		if a.NodeID == "node-1" {
			runtime.Goexit()
		}
		return nil
	}
	var nodeOnce, allocOnce sync.Once
	rm.onNode = func(*si.NodeResponse) error {
		nodeOnce.Do(runtime.Goexit)
		return nil
	}
	rm.onAllocation = func(*si.AllocationResponse) error {
		allocOnce.Do(runtime.Goexit)
		return nil
	}
	register(t, s, rmID, rm)
	if err := s.UpdateNode(nodeRequest(rmID, 100000, 1000, "node-1", "node-2")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the UpdateNode Goexit reported to the library", func() bool {
		_, ok := libLog.find("ResourceManagerCallback.UpdateNode called runtime.Goexit")
		return ok
	})
	if err := s.UpdateApplication(appRequest(rmID, "app-1", "root.a")); err != nil {
		t.Fatal(err)
	}
	// The first UpdateAllocation callback ends in Goexit (what it carried
	// is lost to this RM); the next one arrives.
	if err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{ask("app-1", "a", 10, 1)}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the UpdateAllocation Goexit reported to the library", func() bool {
		_, ok := libLog.find("ResourceManagerCallback.UpdateAllocation called runtime.Goexit")
		return ok
	})
	if err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{ask("app-1", "b", 10, 1)}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an allocation after the Goexit", func() (ok bool) {
		rm.read(func() {
			for _, a := range rm.allocations {
				ok = ok || a.AllocationKey == "b"
			}
		})
		return ok
	})
	for _, method := range []string{"Predicates", "UpdateNode", "UpdateAllocation"} {
		if _, ok := bindingLog.find("called runtime.Goexit", "method="+method); !ok {
			t.Errorf("the binding logged no Goexit of %s", method)
		}
	}
	rm.read(func() {
		for _, a := range rm.allocations {
			if a.NodeID != "node-2" {
				t.Errorf("allocation %s on %s although Predicates ended in Goexit there", a.AllocationKey, a.NodeID)
			}
		}
	})
	// Synchronous calls still work from here, and Close (newTestScheduler's
	// cleanup) stops the scheduler.
	if _, err := s.StateDump(); err != nil {
		t.Fatalf("StateDump after the Goexits: %v", err)
	}
}

// TestGoexitInEveryKindOfCallback drives the three Go halves of the
// callback kinds (status, notification, answer) with runtime.Goexit in
// the RM's code.
func TestGoexitInEveryKindOfCallback(t *testing.T) {
	s := newTestScheduler(t, WithLogger(slog.New(&captureHandler{})), WithGoexitGuard(true))
	r := newRegistration(s, configRM{newFakeRM(), func(*si.UpdateConfigurationRequest) *si.UpdateConfigurationResponse {
		runtime.Goexit()
		return nil
	}})
	defer r.free()
	msg, _ := proto.Marshal(&si.NodeResponse{})
	rc, reason := runStatus(uintptr(r.handle), "UpdateNode", msg, unmarshal[si.NodeResponse],
		func(api.ResourceManagerCallback, *si.NodeResponse) error { runtime.Goexit(); return nil })
	if rc != 1 || !strings.Contains(string(reason), "ResourceManagerCallback.UpdateNode called runtime.Goexit") {
		t.Errorf("status callback: got (%d, %q)", rc, reason)
	}
	delivered := false
	notifyCall(uintptr(r.handle), "SendEvent", func(*registration) error { runtime.Goexit(); return nil })
	notifyCall(uintptr(r.handle), "SendEvent", func(*registration) error { delivered = true; return nil })
	if !delivered {
		t.Errorf("the notification after the Goexit was not delivered")
	}
	req, _ := proto.Marshal(&si.UpdateConfigurationRequest{})
	got := new(si.UpdateConfigurationResponse)
	if err := proto.Unmarshal(configurationAnswer(uintptr(r.handle), req), got); err != nil {
		t.Fatal(err)
	}
	if got.Success || !strings.Contains(got.Reason, "UpdateConfiguration called runtime.Goexit") {
		t.Errorf("answer callback: got %v", got)
	}
}
