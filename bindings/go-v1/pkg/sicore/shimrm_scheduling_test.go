package sicore

// The shimRM's scheduling tests: start-up, predicates, gangs, foreign pods, node removal, resizes, rejections.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
)

// TestShimStartup: CREATE_DRAIN answers for every node (a duplicate is
// rejected, with a reason); running pods are echoed in new on their nodes;
// nodes take no pod before DRAIN_TO_SCHEDULABLE.
func TestShimStartup(t *testing.T) {
	s := newTestScheduler(t)
	rm := newShimRM(t, s, "shim-startup", 0)
	if err := rm.register(shimQueues); err != nil {
		t.Fatalf("RegisterResourceManager: %v", err)
	}
	nodes := nodeNames(3)
	rm.registerNodes(10000, nodes...)
	for _, id := range nodes {
		if a := rm.lastAnswer(id); a != "accepted" {
			t.Errorf("node %s: %q, want accepted", id, a)
		}
	}
	rm.registerNodes(10000, "node-1") // already there
	if a := rm.lastAnswer("node-1"); !strings.HasPrefix(a, "rejected: ") || len(a) == len("rejected: ") {
		t.Errorf("second CREATE_DRAIN of node-1: %q, want rejected with a reason", a)
	}
	rm.addApp("app-1", "root.a", nil)
	if ok, reason := rm.waitApp("app-1"); !ok {
		t.Fatalf("app-1 rejected: %s", reason)
	}
	running := []*shimPod{{key: "run-0", app: "app-1", memory: 100, node: "node-0"},
		{key: "run-2", app: "app-1", memory: 100, node: "node-2"}}
	rm.recoverPods(running...)
	waitFor(t, "the echo of the running pods", func() bool { return rm.newCount("run-0") > 0 && rm.newCount("run-2") > 0 })
	rm.mu.Lock()
	for _, a := range rm.newAllocs {
		want := map[string]string{"run-0": "node-0", "run-2": "node-2"}[a.AllocationKey]
		if a.NodeID != want || a.ApplicationID != "app-1" {
			t.Errorf("echo %s on %q of %q, want node %q of app-1", a.AllocationKey, a.NodeID, a.ApplicationID, want)
		}
	}
	rm.mu.Unlock()
	// A pending pod while every node is still drained: it must wait for
	// DRAIN_TO_SCHEDULABLE (the callback records the phase it came in).
	for id, n := range stateNodes(t, s, rm.rmID) {
		if n.Schedulable {
			t.Errorf("node %s schedulable before DRAIN_TO_SCHEDULABLE", id)
		}
	}
	rm.submitIn("drained", &shimPod{key: "pending-0", app: "app-1", memory: 100})
	rm.enableNodes(nodes...)
	waitFor(t, "pending-0 placed", func() bool { return rm.nodeOf("pending-0") != "" })
	rm.cacheLock.RLock()
	if ph := rm.pods["pending-0"].phase; ph != "ready" {
		t.Errorf("pending-0 was placed in phase %q, before DRAIN_TO_SCHEDULABLE", ph)
	}
	rm.cacheLock.RUnlock()
	if n := rm.newCount("run-0"); n != 1 {
		t.Errorf("run-0 echoed %d times, want once", n)
	}
	got := stateNodes(t, s, rm.rmID)
	for _, id := range nodes {
		if n, ok := got[id]; !ok || !n.Schedulable {
			t.Errorf("node %s after DRAIN_TO_SCHEDULABLE: %+v (listed %v), want schedulable", id, n, ok)
		}
	}
	rm.checkClean()
}

// TestShimPredicatesSeeAssumedPods: one pod per node and one host port
// per node, answered from the cache the UpdateAllocation callback fills.
// Many pods at once, so a batched pass makes many decisions: each
// Predicates must see the pods assumed before it.
func TestShimPredicatesSeeAssumedPods(t *testing.T) {
	s := newTestScheduler(t)
	nodes := nodeNames(6)
	rm := startShim(t, s, "shim-predicates", 1, 100000, nodes,
		&shimPod{key: "run-0", app: "app-1", memory: 10, node: "node-0", hostPort: 8080})
	var pending []*shimPod
	var pendingKeys []string
	for i := 0; i < 12; i++ {
		p := &shimPod{key: fmt.Sprintf("pod-%02d", i), app: "app-1", memory: 10}
		if i%2 == 0 {
			p.hostPort = 8080
		}
		pending = append(pending, p)
		pendingKeys = append(pendingKeys, p.key)
	}
	rm.submit(pending...)
	// Five free nodes (node-0 runs run-0): exactly five pods fit.
	waitFor(t, "five pods placed", func() bool { return rm.placedCount(pendingKeys...) == 5 })
	rm.mu.Lock()
	calls := rm.predicateCalls
	rm.mu.Unlock()
	if calls < 5 {
		t.Errorf("%d Predicates calls, want at least one per placed pod", calls)
	}
	// A deleted pod is released by key and frees its node for one more.
	rm.deletePod("run-0", si.TerminationType_STOPPED_BY_RM)
	waitFor(t, "run-0 released by the core", func() bool { return rm.releasedKeys(si.TerminationType_STOPPED_BY_RM)["run-0"] })
	waitFor(t, "a sixth pod placed on node-0", func() bool { return rm.placedCount(pendingKeys...) == 6 })
	placed := ""
	for _, k := range pendingKeys {
		if rm.nodeOf(k) == "node-0" {
			placed = k
		}
	}
	if placed == "" {
		t.Errorf("no pod went to node-0 after run-0 was deleted")
	}
	// Deleting a pending pod is a release by key too: it never gets placed.
	for _, k := range pendingKeys {
		if rm.nodeOf(k) == "" {
			rm.deletePod(k, si.TerminationType_STOPPED_BY_RM)
		}
	}
	for _, k := range pendingKeys {
		if n := rm.nodeOf(k); n != "" {
			rm.deletePod(k, si.TerminationType_STOPPED_BY_RM)
		}
	}
	for _, k := range pendingKeys {
		if rm.newCount(k) > 1 {
			t.Errorf("%s reported new %d times", k, rm.newCount(k))
		}
	}
	rm.checkClean()
}

// TestShimGang: placeholders are placed, the real pods replace them by
// key (PLACEHOLDER_REPLACED, confirmed by the RM), and each real pod lands
// where its placeholder was.
func TestShimGang(t *testing.T) {
	s := newTestScheduler(t)
	nodes := nodeNames(2)
	// No pod limit: whether the core asks Predicates for a replacement
	// on the placeholder's node is its own business.
	rm := startShim(t, s, "shim-gang", 0, 100000, nodes)
	rm.addApp("gang-1", "root.a", quantity(200))
	if ok, reason := rm.waitApp("gang-1"); !ok {
		t.Fatalf("gang-1 rejected: %s", reason)
	}
	rm.submit(&shimPod{key: "ph-0", app: "gang-1", memory: 100, taskGroup: "tg", placeholder: true},
		&shimPod{key: "ph-1", app: "gang-1", memory: 100, taskGroup: "tg", placeholder: true})
	waitFor(t, "both placeholders placed", func() bool { return rm.placedCount("ph-0", "ph-1") == 2 })
	phNode := map[string]string{rm.nodeOf("ph-0"): "ph-0", rm.nodeOf("ph-1"): "ph-1"}
	rm.submit(&shimPod{key: "real-0", app: "gang-1", memory: 100, taskGroup: "tg"},
		&shimPod{key: "real-1", app: "gang-1", memory: 100, taskGroup: "tg"})
	waitFor(t, "both real pods placed", func() bool { return rm.placedCount("real-0", "real-1") == 2 })
	replaced := rm.releasedKeys(si.TerminationType_PLACEHOLDER_REPLACED)
	if !replaced["ph-0"] || !replaced["ph-1"] || len(replaced) != 2 {
		t.Errorf("PLACEHOLDER_REPLACED releases %v, want ph-0 and ph-1", keys(replaced))
	}
	rm.confirmations.Wait()
	rm.mu.Lock()
	if len(rm.lateNew) != 0 {
		t.Errorf("replaced placeholders placed again: %v", rm.lateNew)
	}
	rm.mu.Unlock()
	for _, k := range []string{"real-0", "real-1"} {
		if _, ok := phNode[rm.nodeOf(k)]; !ok {
			t.Errorf("%s placed on %s, not on a placeholder's node %v", k, rm.nodeOf(k), keys(phNode))
		}
	}
	rm.checkClean()
}

// TestShimForeignPods: a foreign pod occupies its node, a resize by
// re-sending frees room, a release frees the rest; foreign pods are never
// echoed.
func TestShimForeignPods(t *testing.T) {
	s := newTestScheduler(t)
	rm := startShim(t, s, "shim-foreign", 0, 1000, []string{"node-0"})
	rm.addApp("app-1", "root.a", nil)
	if ok, reason := rm.waitApp("app-1"); !ok {
		t.Fatalf("app-1 rejected: %s", reason)
	}
	rm.foreignPod("occupied", "foreign-0", "node-0", 800)
	waitFor(t, "node-0 occupied", func() bool { return stateNodes(t, s, rm.rmID)["node-0"].Occupied["memory"] == 800 })
	// The foreign pod is applied before this pod is looked at: both go
	// through the same queue, in order.
	rm.submit(&shimPod{key: "pod-a", app: "app-1", memory: 500})
	rm.foreignPod("resized", "foreign-0", "node-0", 300)
	waitFor(t, "pod-a placed", func() bool { return rm.nodeOf("pod-a") != "" })
	if occ := stateNodes(t, s, rm.rmID)["node-0"].Occupied["memory"]; occ != 300 {
		t.Errorf("node-0 occupied memory %d after the resize, want 300", occ)
	}
	rm.submit(&shimPod{key: "pod-b", app: "app-1", memory: 500})
	rm.updateAllocationIn("released", &si.AllocationRequest{Releases: &si.AllocationReleasesRequest{
		AllocationsToRelease: []*si.AllocationRelease{{PartitionName: "default", AllocationKey: "foreign-0",
			TerminationType: si.TerminationType_STOPPED_BY_RM, Message: "pod terminated"}}}})
	waitFor(t, "pod-b placed", func() bool { return rm.nodeOf("pod-b") != "" })
	rm.cacheLock.RLock()
	if ph := rm.pods["pod-a"].phase; ph != "resized" {
		t.Errorf("pod-a placed in phase %q, while the foreign pod still occupied 800 of 1000", ph)
	}
	if ph := rm.pods["pod-b"].phase; ph != "released" {
		t.Errorf("pod-b placed in phase %q, while the foreign pod still occupied 300 of 1000", ph)
	}
	rm.cacheLock.RUnlock()
	rm.checkClean()
}

// TestShimNodeRemoval: DECOMISSION releases the node's pods with
// STOPPED_BY_RM, and pending pods go elsewhere.
func TestShimNodeRemoval(t *testing.T) {
	s := newTestScheduler(t)
	rm := startShim(t, s, "shim-remove", 1, 100000, nodeNames(2),
		&shimPod{key: "run-0", app: "app-1", memory: 10, node: "node-0"})
	rm.updateNode(&si.NodeRequest{Nodes: []*si.NodeInfo{{NodeID: "node-0", Action: si.NodeInfo_DECOMISSION}}})
	waitFor(t, "run-0 released", func() bool { return rm.releasedKeys(si.TerminationType_STOPPED_BY_RM)["run-0"] })
	waitFor(t, "node-0 gone from the state dump", func() bool {
		_, listed := stateNodes(t, s, rm.rmID)["node-0"]
		return !listed
	})
	// The RM's cache still has node-0 (the k8s node object goes later):
	// only the core can keep pods off it now.
	rm.submit(&shimPod{key: "pod-a", app: "app-1", memory: 10})
	waitFor(t, "pod-a placed", func() bool { return rm.nodeOf("pod-a") != "" })
	if n := rm.nodeOf("pod-a"); n != "node-1" {
		t.Errorf("pod-a on %s, want node-1", n)
	}
	rm.checkClean()
}

// resizeIn re-sends a pod's allocation with a new size (the k8shim does
// when a pod is resized), with its node once it has one, entering phase.
func (rm *shimRM) resizeIn(phase, key string, memory int64) {
	rm.cacheLock.Lock()
	p := rm.pods[key]
	p.memory = memory
	a := podAllocation(p)
	a.NodeID = p.node
	rm.cacheLock.Unlock()
	rm.updateAllocationIn(phase, &si.AllocationRequest{Allocations: []*si.Allocation{a}})
}

// TestShimResize: re-sending a placed pod with other resources resizes
// its allocation (node usage follows), and the room it frees or takes
// decides what else fits.
func TestShimResize(t *testing.T) {
	s := newTestScheduler(t)
	rm := startShim(t, s, "shim-resize", 0, 1000, []string{"node-0"})
	rm.addApp("app-1", "root.a", nil)
	if ok, reason := rm.waitApp("app-1"); !ok {
		t.Fatalf("app-1 rejected: %s", reason)
	}
	rm.submit(&shimPod{key: "pod-a", app: "app-1", memory: 100})
	waitFor(t, "pod-a placed", func() bool { return rm.nodeOf("pod-a") != "" })
	rm.resizeIn("big", "pod-a", 600)
	waitFor(t, "node-0 allocated memory 600", func() bool {
		return stateNodes(t, s, rm.rmID)["node-0"].Allocated["memory"] == 600
	})
	rm.submit(&shimPod{key: "pod-b", app: "app-1", memory: 500})
	rm.resizeIn("small", "pod-a", 300)
	waitFor(t, "pod-b placed", func() bool { return rm.nodeOf("pod-b") != "" })
	rm.cacheLock.RLock()
	if ph := rm.pods["pod-b"].phase; ph != "small" {
		t.Errorf("pod-b placed in phase %q, while pod-a still held 600 of 1000", ph)
	}
	rm.cacheLock.RUnlock()
	if got := stateNodes(t, s, rm.rmID)["node-0"].Allocated["memory"]; got != 800 {
		t.Errorf("node-0 allocated memory %d, want 800 (pod-a 300, pod-b 500)", got)
	}
	if n := rm.newCount("pod-a"); n != 1 {
		t.Errorf("pod-a reported new %d times; a resize is not a new allocation", n)
	}
	rm.checkClean()
}

// TestShimRejections: a pod of an unknown application and a foreign pod
// without a node are rejected by key (the k8shim fails the task); a pod
// with zero resources too.
func TestShimRejections(t *testing.T) {
	s := newTestScheduler(t)
	rm := startShim(t, s, "shim-reject", 0, 1000, []string{"node-0"})
	rm.cacheLock.Lock()
	rm.pods["orphan"] = &shimPod{key: "orphan", app: "no-such-app", memory: 10}
	rm.pods["nowhere"] = &shimPod{key: "nowhere", memory: 10, foreign: true}
	rm.cacheLock.Unlock()
	orphan := podAllocation(&shimPod{key: "orphan", app: "no-such-app", memory: 10})
	nowhere := podAllocation(&shimPod{key: "nowhere", memory: 10, foreign: true})
	rm.updateAllocation(&si.AllocationRequest{Allocations: []*si.Allocation{orphan, nowhere}})
	waitFor(t, "both rejected", func() bool {
		rm.mu.Lock()
		defer rm.mu.Unlock()
		return len(rm.rejected) >= 2
	})
	rm.mu.Lock()
	got := map[string]*si.RejectedAllocation{}
	for _, r := range rm.rejected {
		got[r.AllocationKey] = r
	}
	rm.mu.Unlock()
	if r := got["orphan"]; r == nil || r.ApplicationID != "no-such-app" || r.Reason == "" {
		t.Errorf("rejection of orphan: %v", r)
	}
	if r := got["nowhere"]; r == nil || r.Reason == "" {
		t.Errorf("rejection of the foreign pod without a node: %v", r)
	}
	rm.checkClean()
}

// TestShimGangTimeout: placeholders whose real pods never come are
// released with TIMEOUT, the placed ones and the pending one alike, and
// the RM confirms each by key.
func TestShimGangTimeout(t *testing.T) {
	s := newTestScheduler(t)
	rm := startShim(t, s, "shim-gang-timeout", 0, 1000, []string{"node-0"})
	rm.addGangApp("gang-1", "root.a", quantity(1200), 300)
	if ok, reason := rm.waitApp("gang-1"); !ok {
		t.Fatalf("gang-1 rejected: %s", reason)
	}
	rm.submit(&shimPod{key: "ph-0", app: "gang-1", memory: 400, taskGroup: "tg", placeholder: true},
		&shimPod{key: "ph-1", app: "gang-1", memory: 400, taskGroup: "tg", placeholder: true},
		&shimPod{key: "ph-2", app: "gang-1", memory: 400, taskGroup: "tg", placeholder: true}) // fits nowhere
	waitFor(t, "two placeholders placed", func() bool { return rm.placedCount("ph-0", "ph-1") == 2 })
	waitFor(t, "TIMEOUT releases of the three placeholders", func() bool {
		r := rm.releasedKeys(si.TerminationType_TIMEOUT)
		return r["ph-0"] && r["ph-1"] && r["ph-2"]
	})
	rm.confirmations.Wait()
	waitFor(t, "node-0 empty after the confirmed timeouts", func() bool {
		return stateNodes(t, s, rm.rmID)["node-0"].Allocated["memory"] == 0
	})
	rm.checkClean()
}
