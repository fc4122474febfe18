package sicore

import (
	"encoding/json"
	"testing"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
)

// What the k8shim v1.9.0 does differently from v1.8.0 towards its core
// (delta spec section 13), played by the shimRM of shimrm_test.go with the
// v1.9 habits added here: nodes follow cordoning (DRAIN_NODE and
// DRAIN_TO_SCHEDULABLE at any time, a node cordoned at start-up is never
// enabled), and a pod that ends before its application is accepted has
// its release held until the acceptance, when the shim sends the held
// releases, or RemoveApplication if every task has ended. There is no
// plugin mode: the only binary is the shim's main (replace_test.go builds
// a program like it against yunikorn-core v1.9.0).

// cordon sends DRAIN_NODE for a known node, as the v1.9 shim does when a
// node's spec.unschedulable turns true (nodeID only).
func (rm *shimRM) cordon(id string) {
	rm.updateNode(&si.NodeRequest{Nodes: []*si.NodeInfo{{NodeID: id, Action: si.NodeInfo_DRAIN_NODE}}})
}

// uncordon sends DRAIN_TO_SCHEDULABLE for a known node.
func (rm *shimRM) uncordon(id string) {
	rm.updateNode(&si.NodeRequest{Nodes: []*si.NodeInfo{{NodeID: id, Action: si.NodeInfo_DRAIN_TO_SCHEDULABLE}}})
}

// TestShim19Cordon: a node cordoned at start-up is registered but never
// enabled and takes no pod; cordoning a node keeps its pods and stops new
// ones; uncordoning lets pods onto it again.
func TestShim19Cordon(t *testing.T) {
	s := newTestScheduler(t)
	rm := newShimRM(t, s, "shim19-cordon", 0)
	if err := rm.register(shimQueues); err != nil {
		t.Fatalf("RegisterResourceManager: %v", err)
	}
	// node-2 is cordoned when the shim starts: CREATE_DRAIN only.
	rm.registerNodes(1000, "node-0", "node-1", "node-2")
	rm.enableNodes("node-0", "node-1")
	rm.addApp("app-1", "root.a", nil)
	if ok, reason := rm.waitApp("app-1"); !ok {
		t.Fatalf("app-1 rejected: %s", reason)
	}
	first := []*shimPod{}
	for _, k := range []string{"p0", "p1", "p2", "p3"} {
		first = append(first, &shimPod{key: k, app: "app-1", memory: 400})
	}
	rm.submit(first...)
	waitFor(t, "four pods placed", func() bool { return rm.placedCount("p0", "p1", "p2", "p3") == 4 })
	onNode := func(node string, keys ...string) int {
		n := 0
		for _, k := range keys {
			if rm.nodeOf(k) == node {
				n++
			}
		}
		return n
	}
	if n := onNode("node-2", "p0", "p1", "p2", "p3"); n != 0 {
		t.Errorf("%d pods on node-2, which was cordoned at start-up", n)
	}
	// Cordon node-0: its pods stay; new pods go elsewhere or wait.
	held := onNode("node-0", "p0", "p1", "p2", "p3")
	rm.cordon("node-0")
	rm.deletePod("p0", si.TerminationType_STOPPED_BY_RM)
	rm.submit(&shimPod{key: "q0", app: "app-1", memory: 400})
	if got := stateNodes(t, s, rm.rmID)["node-0"]; got.Schedulable {
		t.Errorf("node-0 schedulable after DRAIN_NODE: %+v", got)
	}
	rm.uncordon("node-2")
	waitFor(t, "q0 placed on the uncordoned node", func() bool { return rm.nodeOf("q0") != "" })
	if node := rm.nodeOf("q0"); node == "node-0" {
		t.Errorf("q0 placed on cordoned node-0")
	}
	if n := onNode("node-0", "p1", "p2", "p3"); n > held {
		t.Errorf("node-0 holds %d of the first pods, more than the %d it held at the cordon", n, held)
	}
	// Uncordon node-0 and fill it again.
	rm.uncordon("node-0")
	if got := stateNodes(t, s, rm.rmID)["node-0"]; !got.Schedulable {
		t.Errorf("node-0 not schedulable after DRAIN_TO_SCHEDULABLE: %+v", got)
	}
	rm.checkClean()
}

// TestShim19HeldReleases: the v1.9 shim holds the releases of pods that
// ended before their application was accepted. At the acceptance it sends
// them, or, when every task has ended, RemoveApplication at once, with no
// allocation ever made. The core takes both as ordinary requests: no
// error, no stray callback, the application gone.
func TestShim19HeldReleases(t *testing.T) {
	s := newTestScheduler(t)
	rm := startShim(t, s, "shim19-held", 0, 1000, nodeNames(2))
	// Every task ended before the acceptance: RemoveApplication follows it.
	rm.addApp("app-done", "root.a", nil)
	if ok, reason := rm.waitApp("app-done"); !ok {
		t.Fatalf("app-done rejected: %s", reason)
	}
	rm.ctxLock.Lock()
	err := s.UpdateApplication(&si.ApplicationRequest{RmID: rm.rmID, Remove: []*si.RemoveApplicationRequest{{
		ApplicationID: "app-done", PartitionName: "default"}}})
	rm.ctxLock.Unlock()
	if err != nil {
		t.Fatalf("RemoveApplication right after the acceptance: %v", err)
	}
	// One task ended early, one still runs: the held release comes after
	// the acceptance, back to back with the other pod's request.
	rm.addApp("app-mixed", "root.a", nil)
	if ok, reason := rm.waitApp("app-mixed"); !ok {
		t.Fatalf("app-mixed rejected: %s", reason)
	}
	// The pod was never sent (its task waited for the acceptance); the
	// held release names it all the same.
	rm.cacheLock.Lock()
	rm.pods["early"] = &shimPod{key: "early", app: "app-mixed", memory: 100}
	rm.cacheLock.Unlock()
	rm.deletePod("early", si.TerminationType_STOPPED_BY_RM)
	rm.submit(&shimPod{key: "late", app: "app-mixed", memory: 100})
	waitFor(t, "late placed", func() bool { return rm.nodeOf("late") != "" })
	waitFor(t, "app-done removed", func() bool {
		_, listed := stateApps(t, s, rm.rmID)["app-done"]
		return !listed
	})
	rm.mu.Lock()
	for _, r := range rm.rejected {
		t.Errorf("a request was rejected: %+v", r)
	}
	for _, r := range rm.released {
		if r.ApplicationID == "app-done" {
			t.Errorf("a release for app-done, which never had an allocation: %+v", r)
		}
	}
	rm.mu.Unlock()
	rm.checkClean()
}

// stateApps is the state dump's applications of rmID's partitions, by id,
// with their state.
func stateApps(t testing.TB, s *Scheduler, rmID string) map[string]string {
	t.Helper()
	b, err := s.StateDump()
	if err != nil {
		t.Fatalf("StateDump: %v", err)
	}
	var dump struct {
		Partitions []struct {
			RmID string `json:"rm_id"`
			Apps []struct {
				ID    string `json:"id"`
				State string `json:"state"`
			} `json:"applications"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(b, &dump); err != nil {
		t.Fatalf("state dump: %v", err)
	}
	out := make(map[string]string)
	for _, p := range dump.Partitions {
		if p.RmID != rmID {
			continue
		}
		for _, a := range p.Apps {
			out[a.ID] = a.State
		}
	}
	return out
}
