package sicore

import (
	"fmt"
	"testing"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
)

// Queue a fills the nodes above its guarantee; queue b is below its
// guarantee and may preempt after 1 ms. SI v0.12 has the switch off by
// default: it is set.
const preemptQueues = `
partitions:
  - name: default
    preemption: {enabled: true}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            resources: {guaranteed: {memory: 100}}
          - name: b
            resources: {guaranteed: {memory: 1000}}
            properties: {preemption.delay: 1ms}
`

// TestPreemption is one guarantee preemption as a v0.12 RM sees it
// (policy/preemption.md 14): SI v0.12 has no PreemptionPredicates, so the
// core asks Predicates{allocate: false} per candidate node in check order;
// the RM refuses node-0, the core releases a victim on node-1 with
// PREEMPTED_BY_SCHEDULER, the RM confirms by releasing it with the same
// type, and the preemptor is allocated on node-1.
func TestPreemption(t *testing.T) {
	s := newTestScheduler(t, WithPolicyConfig("queues", preemptQueues))
	rm := newFakeRM()
	var checks []string
	rm.onPredicates = func(a *si.PredicatesArgs) error {
		if a.AllocationKey != "b1" {
			return nil
		}
		rm.mu.Lock()
		checks = append(checks, fmt.Sprintf("%s allocate=%v", a.NodeID, a.Allocate))
		rm.mu.Unlock()
		if a.NodeID == "node-0" {
			return fmt.Errorf("node-0: the pod's affinity does not match")
		}
		return nil
	}
	const rmID = "rm-preempt"
	register(t, s, rmID, rm)
	if err := s.UpdateNode(nodeRequest(rmID, 1000, 10, "node-0", "node-1")); err != nil {
		t.Fatalf("UpdateNode: %v", err)
	}
	waitFor(t, "nodes accepted", func() (ok bool) {
		rm.read(func() { ok = len(rm.acceptedNodes) == 2 })
		return ok
	})
	for _, app := range [][2]string{{"app-a", "root.a"}, {"app-b", "root.b"}} {
		if err := s.UpdateApplication(appRequest(rmID, app[0], app[1])); err != nil {
			t.Fatalf("UpdateApplication: %v", err)
		}
	}
	waitFor(t, "applications accepted", func() (ok bool) {
		rm.read(func() { ok = rm.acceptedApps["app-a"] && rm.acceptedApps["app-b"] })
		return ok
	})
	fill := ask("app-a", "a", 500, 1)
	fill.MaxAllocations = 4
	if err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{fill}}); err != nil {
		t.Fatalf("UpdateAllocation: %v", err)
	}
	waitFor(t, "the nodes full", func() bool { return rm.allocationCount() == 4 })

	if err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{ask("app-b", "b1", 500, 1)}}); err != nil {
		t.Fatalf("UpdateAllocation: %v", err)
	}
	var victim *si.AllocationRelease
	waitFor(t, "a victim", func() bool {
		rm.read(func() {
			for _, r := range rm.released {
				if r.TerminationType == si.TerminationType_PREEMPTED_BY_SCHEDULER {
					victim = r
				}
			}
		})
		return victim != nil
	})
	rm.read(func() {
		if a := rm.allocations[victim.UUID]; a == nil || a.NodeID != "node-1" || a.ApplicationID != "app-a" {
			t.Errorf("victim %v is %v, want an app-a allocation on node-1", victim, a)
		}
		if victim.Message != "preempting allocations to free up resources to run ask: b1" {
			t.Errorf("release message %q", victim.Message)
		}
		want := []string{"node-0 allocate=false", "node-1 allocate=false"}
		if fmt.Sprint(checks) != fmt.Sprint(want) {
			t.Errorf("checks %v, want %v", checks, want)
		}
	})

	// The RM deletes the pod and confirms with the same type.
	err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Releases: &si.AllocationReleasesRequest{
		AllocationsToRelease: []*si.AllocationRelease{{
			PartitionName: "default", ApplicationID: "app-a", UUID: victim.UUID,
			TerminationType: si.TerminationType_PREEMPTED_BY_SCHEDULER, Message: "pod deleted",
		}},
	}})
	if err != nil {
		t.Fatalf("UpdateAllocation(confirm): %v", err)
	}
	var preemptor *si.Allocation
	waitFor(t, "the preemptor's allocation", func() bool {
		rm.read(func() {
			for _, a := range rm.allocations {
				if a.AllocationKey == "b1" {
					preemptor = a
				}
			}
		})
		return preemptor != nil
	})
	if preemptor.NodeID != "node-1" || preemptor.QueueName != "root.b" {
		t.Fatalf("preemptor %v, want root.b on node-1", preemptor)
	}
	rm.read(func() {
		n := 0
		for _, r := range rm.released {
			if r.TerminationType == si.TerminationType_PREEMPTED_BY_SCHEDULER {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d victims released, want 1", n)
		}
	})
}
