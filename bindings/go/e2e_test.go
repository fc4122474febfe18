package sicore

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
)

// TestEndToEnd walks the whole SI conversation with the embedded default
// configuration: register, nodes, an application placed in a queue that
// the provided rule creates, asks that become allocations, a release, and
// the application's removal.
func TestEndToEnd(t *testing.T) {
	s := newTestScheduler(t)
	rm := newFakeRM()
	const rmID = "rm-e2e"
	setUp(t, s, rmID, rm, "app-1", "root.a", "node-1", "node-2")

	asks := &si.AllocationRequest{RmID: rmID}
	for _, key := range []string{"ask-1", "ask-2", "ask-3"} {
		asks.Asks = append(asks.Asks, ask("app-1", key, 1000, 1))
	}
	if err := s.UpdateAllocation(asks); err != nil {
		t.Fatalf("UpdateAllocation(asks): %v", err)
	}
	waitFor(t, "3 allocations", func() bool { return rm.allocationCount() == 3 })

	var victim *si.Allocation
	rm.read(func() {
		keys := map[string]bool{}
		for uuid, a := range rm.allocations {
			if uuid == "" || a.ApplicationID != "app-1" || a.QueueName != "root.a" {
				t.Errorf("unexpected allocation %v", a)
			}
			if a.NodeID != "node-1" && a.NodeID != "node-2" {
				t.Errorf("allocation on unknown node %q", a.NodeID)
			}
			keys[a.AllocationKey] = true
			victim = a
		}
		if len(keys) != 3 {
			t.Errorf("allocation keys %v, want ask-1..ask-3", keys)
		}
	})

	dump := stateDump(t, s)
	if !strings.Contains(dump, `"root.a"`) {
		t.Errorf("state dump does not show the dynamic queue root.a:\n%s", dump)
	}

	err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Releases: &si.AllocationReleasesRequest{
		AllocationsToRelease: []*si.AllocationRelease{{
			PartitionName:   "default",
			ApplicationID:   "app-1",
			UUID:            victim.UUID,
			TerminationType: si.TerminationType_STOPPED_BY_RM,
			Message:         "task finished",
		}},
	}})
	if err != nil {
		t.Fatalf("UpdateAllocation(release): %v", err)
	}
	waitFor(t, "release echoed", func() (ok bool) {
		rm.read(func() {
			for _, r := range rm.released {
				if r.UUID == victim.UUID {
					ok = r.TerminationType == si.TerminationType_STOPPED_BY_RM && r.ApplicationID == "app-1"
				}
			}
		})
		return ok
	})

	err = s.UpdateApplication(&si.ApplicationRequest{RmID: rmID, Remove: []*si.RemoveApplicationRequest{{
		ApplicationID: "app-1", PartitionName: "default",
	}}})
	if err != nil {
		t.Fatalf("UpdateApplication(remove): %v", err)
	}
	// Removing the application releases what it still holds and completes it.
	waitFor(t, "all allocations released", func() (ok bool) {
		rm.read(func() {
			released := map[string]bool{}
			for _, r := range rm.released {
				released[r.UUID] = r.TerminationType == si.TerminationType_STOPPED_BY_RM
			}
			ok = len(released) == 3
			for uuid := range rm.allocations {
				ok = ok && released[uuid]
			}
		})
		return ok
	})
	waitFor(t, "application completed", func() (ok bool) {
		rm.read(func() {
			for _, u := range rm.updatedApps {
				ok = ok || (u.ApplicationID == "app-1" && strings.HasPrefix(u.State, "Complet"))
			}
		})
		return ok
	})
}

func stateDump(t testing.TB, s *Scheduler) string {
	t.Helper()
	b, err := s.StateDump()
	if err != nil {
		t.Fatalf("StateDump: %v", err)
	}
	if !json.Valid(b) {
		t.Fatalf("StateDump is not JSON: %s", b)
	}
	return string(b)
}
