package sicore

import (
	"strings"
	"testing"
)

// TestShimPendingReason: a pod larger than every node waits, and the SI
// v1.x edition reads why through the same typed accessor as v0.12.
func TestShimPendingReason(t *testing.T) {
	s := newTestScheduler(t)
	rm := startShim(t, s, "shim-pending", 0, 1000, nodeNames(2))
	rm.addApp("app-big", "root.a", nil)
	if ok, reason := rm.waitApp("app-big"); !ok {
		t.Fatalf("app-big rejected: %s", reason)
	}
	// Larger than each node, smaller than the two: held by the nodes, not root.
	rm.submit(&shimPod{key: "huge", app: "app-big", memory: 1500})

	var r *PendingReason
	waitFor(t, "huge waiting for nodes", func() bool {
		reasons, err := s.PendingReasons("default", "app-big")
		if err != nil {
			t.Fatalf("PendingReasons: %v", err)
		}
		r = reasons["huge"]
		return r != nil && r.Cause == CauseNodes
	})
	if r.Nodes == nil || r.Nodes.Total != 2 || r.Nodes.Insufficient["memory"] != 2 || r.Nodes.Refused != 0 {
		t.Errorf("nodes: %+v", r.Nodes)
	}
	if !strings.HasPrefix(r.Message, "0/2 nodes fit") {
		t.Errorf("message %q", r.Message)
	}
}
