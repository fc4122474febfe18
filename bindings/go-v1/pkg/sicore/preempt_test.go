package sicore

import (
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
)

// Queue a holds the running pods above its guarantee; queue b is below
// its guarantee and its pods may preempt after 1 ms.
const preemptQueues = `
partitions:
  - name: default
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

// TestShimPreemption is one guarantee preemption as the k8shim v1.8 sees
// it: two full nodes of queue a's pods; a pod of queue b arrives; the core
// asks PreemptionPredicates about each node in check order (the k8shim
// answers from its cache as if the victims before the start index were
// gone), releases the newest pod of the first node that passes with
// PREEMPTED_BY_SCHEDULER, the RM deletes it and confirms by key with the
// same type, and the preemptor gets that node.
func TestShimPreemption(t *testing.T) {
	s := newTestScheduler(t)
	rm := newShimRM(t, s, "shim-preempt", 2)
	var mu sync.Mutex
	var checks []*si.PreemptionPredicatesArgs
	// The k8shim's PreemptionPredicates: the victims up to the start
	// index are gone; then one more at a time until the pod count fits.
	rm.cb = &hookRM{shimRM: rm, onPreempt: func(a *si.PreemptionPredicatesArgs) *si.PreemptionPredicatesResponse {
		mu.Lock()
		checks = append(checks, a)
		mu.Unlock()
		rm.cacheLock.RLock()
		defer rm.cacheLock.RUnlock()
		n := rm.nodes[a.NodeID]
		if n == nil {
			return &si.PreemptionPredicatesResponse{Success: false, Index: -1}
		}
		for i := int(a.StartIndex); i < len(a.PreemptAllocationKeys); i++ {
			if len(n.pods)-(i+1) < rm.maxPods {
				return &si.PreemptionPredicatesResponse{Success: true, Index: int32(i)}
			}
		}
		return &si.PreemptionPredicatesResponse{Success: false, Index: -1}
	}}
	if err := rm.register(preemptQueues); err != nil {
		t.Fatalf("RegisterResourceManager: %v", err)
	}
	nodes := []string{"node-0", "node-1"}
	rm.registerNodes(1000, nodes...)
	rm.addApp("app-a", "root.a", nil)
	if ok, reason := rm.waitApp("app-a"); !ok {
		t.Fatalf("app-a rejected: %s", reason)
	}
	// Recovered in this order: p2 is newer than p1 on node-0.
	running := []*shimPod{
		{key: "p1", app: "app-a", memory: 500, node: "node-0"},
		{key: "p2", app: "app-a", memory: 500, node: "node-0"},
		{key: "p3", app: "app-a", memory: 500, node: "node-1"},
		{key: "p4", app: "app-a", memory: 500, node: "node-1"},
	}
	rm.recoverPods(running...)
	for _, p := range running {
		waitFor(t, "the echo of running pod "+p.key, func() bool { return rm.newCount(p.key) > 0 })
	}
	rm.enableNodes(nodes...)

	rm.addApp("app-b", "root.b", nil)
	if ok, reason := rm.waitApp("app-b"); !ok {
		t.Fatalf("app-b rejected: %s", reason)
	}
	rm.submitIn("preempting", &shimPod{key: "b1", app: "app-b", memory: 500})
	waitFor(t, "the preemptor placed", func() bool { return rm.nodeOf("b1") != "" })
	rm.checkClean()

	victims := rm.releasedKeys(si.TerminationType_PREEMPTED_BY_SCHEDULER)
	if !reflect.DeepEqual(victims, map[string]bool{"p2": true}) {
		t.Fatalf("victims %v, want p2 (the newest pod of node-0)", victims)
	}
	if n := rm.nodeOf("b1"); n != "node-0" {
		t.Fatalf("b1 on %s, want node-0 (its victim's node)", n)
	}
	mu.Lock()
	first := checks[0]
	mu.Unlock()
	if first.AllocationKey != "b1" || first.NodeID != "node-0" || first.StartIndex != 0 ||
		!reflect.DeepEqual(first.PreemptAllocationKeys, []string{"p2", "p1"}) {
		t.Fatalf("first check %v, want b1 on node-0 with [p2 p1] from 0", first)
	}
	rm.mu.Lock()
	var release *si.AllocationRelease
	for _, r := range rm.released {
		if r.AllocationKey == "p2" {
			release = r
		}
	}
	rm.mu.Unlock()
	if release.ApplicationID != "app-a" || release.Message != "preempting allocations to free up resources to run ask: b1" {
		t.Fatalf("release %v", release)
	}
	// The victim's pod is gone from the RM's cache; the others stay.
	for _, k := range []string{"p1", "p3", "p4"} {
		if rm.nodeOf(k) == "" {
			t.Errorf("pod %s lost its node", k)
		}
	}
	waitFor(t, "the victim's event", func() bool {
		rm.mu.Lock()
		defer rm.mu.Unlock()
		for _, e := range rm.events {
			if e.ObjectID == "p2" && strings.HasPrefix(e.Message, "Preempted by b1 from application app-b in root.b") {
				return true
			}
		}
		return false
	})
	// Exactly one preemption, whatever else the passes try.
	if n := len(rm.releasedKeys(si.TerminationType_PREEMPTED_BY_SCHEDULER)); n != 1 {
		t.Fatalf("%d victims, want 1", n)
	}
}
