package sicore

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
)

// TestGangHappyPath is what a Go RM sends for a gang and what it gets back:
// the application with its placeholderAsk, the placeholder asks of a task
// group, then the real asks of the group. Each placeholder is released
// with PLACEHOLDER_REPLACED naming its real allocation; the RM confirms
// and receives the real allocation on the same node.
func TestGangHappyPath(t *testing.T) {
	s := newTestScheduler(t, WithPlaceholderTimeout(10*time.Minute))
	rm := newFakeRM()
	const rmID = "rm-gang"
	register(t, s, rmID, rm)
	if err := s.UpdateNode(nodeRequest(rmID, 10000, 100, "node-1", "node-2")); err != nil {
		t.Fatalf("UpdateNode: %v", err)
	}
	waitFor(t, "nodes accepted", func() (ok bool) {
		rm.read(func() { ok = len(rm.acceptedNodes) == 2 })
		return ok
	})
	app := appRequest(rmID, "spark-1", "root.gang")
	app.New[0].PlaceholderAsk = resource(3000, 3)
	app.New[0].GangSchedulingStyle = "Hard"
	app.New[0].ExecutionTimeoutMilliSeconds = 60000
	if err := s.UpdateApplication(app); err != nil {
		t.Fatalf("UpdateApplication: %v", err)
	}
	waitFor(t, "application accepted", func() (ok bool) {
		rm.read(func() { ok = rm.acceptedApps["spark-1"] })
		return ok
	})

	placeholders := ask("spark-1", "tg-executors-ph", 1000, 1)
	placeholders.MaxAllocations = 3
	placeholders.TaskGroupName = "executors"
	placeholders.Placeholder = true
	if err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{placeholders}}); err != nil {
		t.Fatalf("UpdateAllocation(placeholders): %v", err)
	}
	waitFor(t, "3 placeholders", func() bool { return rm.allocationCount() == 3 })
	placeholderNode := map[string]string{}
	rm.read(func() {
		for uuid, a := range rm.allocations {
			if !a.Placeholder || a.TaskGroupName != "executors" {
				t.Errorf("not a placeholder of group executors: %v", a)
			}
			placeholderNode[uuid] = a.NodeID
		}
	})

	real := ask("spark-1", "executor", 1000, 1)
	real.MaxAllocations = 3
	real.TaskGroupName = "executors"
	if err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{real}}); err != nil {
		t.Fatalf("UpdateAllocation(real): %v", err)
	}
	var replaced []*si.AllocationRelease
	waitFor(t, "3 replacements", func() bool {
		rm.read(func() {
			replaced = replaced[:0]
			for _, r := range rm.released {
				if r.TerminationType == si.TerminationType_PLACEHOLDER_REPLACED {
					replaced = append(replaced, r)
				}
			}
		})
		return len(replaced) == 3
	})
	if n := rm.allocationCount(); n != 3 {
		t.Fatalf("%d allocations before confirmation, want the 3 placeholders only", n)
	}
	realOf := map[string]string{}
	confirm := &si.AllocationRequest{RmID: rmID, Releases: &si.AllocationReleasesRequest{}}
	for _, r := range replaced {
		if _, ok := placeholderNode[r.UUID]; !ok {
			t.Fatalf("release of an unknown placeholder %v", r)
		}
		realOf[strings.TrimPrefix(r.Message, "replacing UUID: ")] = r.UUID
		confirm.Releases.AllocationsToRelease = append(confirm.Releases.AllocationsToRelease, &si.AllocationRelease{
			PartitionName:   "default",
			ApplicationID:   "spark-1",
			UUID:            r.UUID,
			TerminationType: si.TerminationType_PLACEHOLDER_REPLACED,
		})
	}
	if err := s.UpdateAllocation(confirm); err != nil {
		t.Fatalf("UpdateAllocation(confirm): %v", err)
	}
	waitFor(t, "3 real allocations", func() bool { return rm.allocationCount() == 6 })
	rm.read(func() {
		for uuid, a := range rm.allocations {
			if a.Placeholder {
				continue
			}
			ph, ok := realOf[uuid]
			if !ok {
				t.Errorf("real allocation %s was not announced by a replacement", uuid)
				continue
			}
			if a.NodeID != placeholderNode[ph] || a.AllocationKey != "executor" || a.TaskGroupName != "executors" {
				t.Errorf("real allocation %v does not take placeholder %s's place", a, ph)
			}
		}
	})
	waitFor(t, "application running", func() (ok bool) {
		rm.read(func() {
			for _, u := range rm.updatedApps {
				ok = ok || u.State == "Running"
			}
		})
		return ok
	})

	var dump struct {
		Partitions []struct {
			Applications []struct {
				ID          string           `json:"id"`
				GangStyle   string           `json:"gang_style"`
				Allocated   map[string]int64 `json:"allocated"`
				Placeholder map[string]int64 `json:"placeholder"`
				TaskGroups  []struct {
					Name         string `json:"name"`
					Placeholders int    `json:"placeholders"`
					Real         int    `json:"real"`
				} `json:"task_groups"`
			} `json:"applications"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(stateDump(t, s)), &dump); err != nil {
		t.Fatal(err)
	}
	a := dump.Partitions[0].Applications[0]
	if a.ID != "spark-1" || a.GangStyle != "Hard" || a.Allocated["memory"] != 3000 || a.Placeholder["memory"] != 0 {
		t.Errorf("dump: %+v", a)
	}
	if len(a.TaskGroups) != 1 || a.TaskGroups[0].Name != "executors" || a.TaskGroups[0].Placeholders != 0 || a.TaskGroups[0].Real != 3 {
		t.Errorf("dump task groups: %+v", a.TaskGroups)
	}
}

func TestPlaceholderTimeoutMustBePositive(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		if err := WithPlaceholderTimeout(d)(&config{}); err == nil {
			t.Errorf("WithPlaceholderTimeout(%v) accepted", d)
		}
	}
}
