package sicore

// The shimRM's tests of the other API calls: configuration, Stop, the state dump and events.

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
)

// TestShimConfiguration: invalid YAML fails registration with the reason;
// in UpdateConfiguration it is an error and the old queues stay; a valid
// update applies synchronously; an unchanged one is a no-op.
func TestShimConfiguration(t *testing.T) {
	s := newTestScheduler(t)
	bad := newShimRM(t, s, "shim-bad", 0)
	err := bad.register("partitions: [unclosed")
	if !isRejected(err) {
		t.Errorf("registration with invalid YAML: %v, want an error matching ErrRejected", err)
	}

	const strict = `
partitions:
  - name: default
    placementrules:
      - name: provided
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
`
	rm := newShimRM(t, s, "shim-config", 0)
	if err := rm.register(strict); err != nil {
		t.Fatalf("RegisterResourceManager: %v", err)
	}
	rm.addApp("app-a", "root.a", nil)
	if ok, reason := rm.waitApp("app-a"); !ok {
		t.Fatalf("app-a in root.a rejected: %s", reason)
	}
	rm.addApp("app-b1", "root.b", nil)
	if ok, _ := rm.waitApp("app-b1"); ok {
		t.Errorf("app-b1 accepted into root.b, which the configuration does not have")
	}
	if err := rm.updateConfiguration("partitions:\n  - name: default\n    queues: {"); !isRejected(err) {
		t.Errorf("UpdateConfiguration with invalid YAML: %v, want an error matching ErrRejected", err)
	}
	rm.addApp("app-a2", "root.a", nil)
	if ok, reason := rm.waitApp("app-a2"); !ok {
		t.Errorf("app-a2 rejected after a refused update (the old queues must stay): %s", reason)
	}
	if err := rm.updateConfiguration(strict); err != nil {
		t.Errorf("UpdateConfiguration with the unchanged config: %v", err)
	}
	withB := strict + "          - name: b\n"
	if err := rm.updateConfiguration(withB); err != nil {
		t.Fatalf("UpdateConfiguration adding root.b: %v", err)
	}
	rm.addApp("app-b2", "root.b", nil)
	if ok, reason := rm.waitApp("app-b2"); !ok {
		t.Errorf("app-b2 rejected from root.b after the update: %s", reason)
	}
	rm.checkClean()
}

func isRejected(err error) bool {
	e, ok := err.(*Error)
	return ok && e.Status == StatusRejected && e.Message != ""
}

// TestShimStop: Stop stops the scheduler; later calls fail with
// ErrStopped, a second Stop is a no-op, and no handle is left.
func TestShimStop(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	rm := startShim(t, s, "shim-stop", 0, 1000, nodeNames(1))
	var sched api.SchedulerAPI = s
	sched.Stop()
	err = s.UpdateAllocation(&si.AllocationRequest{RmID: rm.rmID})
	if e, ok := err.(*Error); !ok || e.Status != StatusStopped {
		t.Errorf("UpdateAllocation after Stop: %v, want ErrStopped", err)
	}
	sched.Stop()
	if n := liveHandles.Load(); n != 0 {
		t.Errorf("%d callback handles left after Stop", n)
	}
	rm.checkClean()
}

// dumpNode is a node of the library's state dump (docs/rest-and-metrics.md).
type dumpNode struct {
	ID          string           `json:"id"`
	Schedulable bool             `json:"schedulable"`
	Occupied    map[string]int64 `json:"occupied"`
	Allocated   map[string]int64 `json:"allocated"`
}

// stateNodes returns the nodes of rmID's partitions in the state dump.
func stateNodes(t testing.TB, s *Scheduler, rmID string) map[string]dumpNode {
	t.Helper()
	b, err := s.StateDump()
	if err != nil {
		t.Fatalf("StateDump: %v", err)
	}
	var dump struct {
		Partitions []struct {
			RmID  string     `json:"rm_id"`
			Nodes []dumpNode `json:"nodes"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(b, &dump); err != nil {
		t.Fatalf("state dump: %v", err)
	}
	out := make(map[string]dumpNode)
	for _, p := range dump.Partitions {
		if p.RmID != rmID {
			continue
		}
		for _, n := range p.Nodes {
			out[n.ID] = n
		}
	}
	return out
}

// TestShimStateDumpPlugin: the RM's api.StateDumpPlugin (the k8shim
// implements it) is part of the library's full state dump (c-abi.md:
// get_state_dump is "included in the full state dump").
func TestShimStateDumpPlugin(t *testing.T) {
	s := newTestScheduler(t)
	rm := startShim(t, s, "shim-dump", 0, 1000, nodeNames(1))
	dump, err := s.StateDump()
	if err != nil {
		t.Fatalf("StateDump: %v", err)
	}
	if !strings.Contains(string(dump), `"shim":"test"`) {
		t.Errorf("the state dump does not include the RM's GetStateDump JSON")
	}
	rm.mu.Lock()
	calls := rm.stateDumps
	rm.mu.Unlock()
	if calls == 0 {
		t.Errorf("GetStateDump was never called for the state dump")
	}
	rm.checkClean()
}

// TestShimEvents: the k8shim publishes REQUEST records (objectID the
// allocation key, referenceID the application) as pod events and reads
// NODE records (ADD on registration, REMOVE/NODE_DECOMISSION on removal).
func TestShimEvents(t *testing.T) {
	s := newTestScheduler(t, WithEventFlushInterval(20*time.Millisecond))
	rm := startShim(t, s, "shim-events", 0, 100, nodeNames(2))
	rm.addApp("app-1", "root.a", nil)
	if ok, reason := rm.waitApp("app-1"); !ok {
		t.Fatalf("app-1 rejected: %s", reason)
	}
	rm.submit(&shimPod{key: "too-big", app: "app-1", memory: 1000}) // fits nowhere
	rm.updateNode(&si.NodeRequest{Nodes: []*si.NodeInfo{{NodeID: "node-1", Action: si.NodeInfo_DECOMISSION}}})
	find := func(match func(*si.EventRecord) bool) bool {
		rm.mu.Lock()
		defer rm.mu.Unlock()
		for _, e := range rm.events {
			if match(e) {
				return true
			}
		}
		return false
	}
	// Each record is looked for on its own, so that every missing one is
	// reported.
	expect := func(what string, match func(*si.EventRecord) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !find(match) {
			if time.Now().After(deadline) {
				rm.mu.Lock()
				first := rm.events[:min(len(rm.events), 8)]
				t.Errorf("no %s among %d records; the first: %v", what, len(rm.events), first)
				rm.mu.Unlock()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for _, id := range []string{"node-0", "node-1"} {
		expect("NODE ADD record for "+id, func(e *si.EventRecord) bool {
			return e.Type == si.EventRecord_NODE && e.ObjectID == id &&
				e.EventChangeType == si.EventRecord_ADD && e.EventChangeDetail == si.EventRecord_DETAILS_NONE
		})
	}
	expect("NODE REMOVE/NODE_DECOMISSION record for node-1", func(e *si.EventRecord) bool {
		return e.Type == si.EventRecord_NODE && e.ObjectID == "node-1" &&
			e.EventChangeType == si.EventRecord_REMOVE && e.EventChangeDetail == si.EventRecord_NODE_DECOMISSION
	})
	expect("REQUEST record for too-big with app-1 as referenceID", func(e *si.EventRecord) bool {
		return e.Type == si.EventRecord_REQUEST && e.ObjectID == "too-big" && e.ReferenceID == "app-1" && e.Message != ""
	})
	rm.checkClean()
}
