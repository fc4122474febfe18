package sicore

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
)

// waitReason polls s.PendingReasons until key of appID waits for cause.
func waitReason(t *testing.T, s *Scheduler, appID, key string, cause PendingCause) *PendingReason {
	t.Helper()
	var got *PendingReason
	waitFor(t, key+" waiting for "+string(cause), func() bool {
		reasons, err := s.PendingReasons("default", appID)
		if err != nil {
			t.Fatalf("PendingReasons: %v", err)
		}
		got = reasons[key]
		return got != nil && got.Cause == cause
	})
	return got
}

// TestPendingReasonNodes: one node too small for the ask, two refused by
// the RM's predicates, read back as counts per cause.
func TestPendingReasonNodes(t *testing.T) {
	s := newTestScheduler(t)
	rm := newFakeRM()
	rm.onPredicates = func(*si.PredicatesArgs) error { return errors.New("port 8080 in use") }
	const rmID = "rm-pending"
	setUp(t, s, rmID, rm, "app-1", "root.a", "node-1", "node-2")
	if err := s.UpdateNode(nodeRequest(rmID, 1000, 1000, "small")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "small node", func() (ok bool) {
		rm.read(func() { ok = rm.acceptedNodes["small"] })
		return ok
	})
	if err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{
		ask("app-1", "waits", 5000, 1),
	}}); err != nil {
		t.Fatal(err)
	}

	r := waitReason(t, s, "app-1", "waits", CauseNodes)
	if r.Nodes == nil || r.Nodes.Total != 3 {
		t.Fatalf("nodes: %+v", r.Nodes)
	}
	n := r.Nodes
	if n.Insufficient["memory"] != 1 || n.Refused != 2 || len(n.Refusals) != 1 || n.Refusals[0].Count != 2 ||
		!strings.Contains(n.Refusals[0].Reason, "port 8080 in use") {
		t.Errorf("counts: %+v", n)
	}
	if !strings.HasPrefix(r.Message, "0/3 nodes fit") || !strings.Contains(r.Message, "port 8080 in use") {
		t.Errorf("message %q", r.Message)
	}
	if r.Passes < 1 || r.Since <= 0 || r.LastTried < r.Since || len(r.AllocationLog) == 0 {
		t.Errorf("bookkeeping: %+v", r)
	}
	if r.Queue != "" || r.Gang != nil || r.ReservedNode != "" {
		t.Errorf("fields of other causes set: %+v", r)
	}
}

// TestPendingReasonUserLimit: a user's resource limit holds the third ask
// of 1000 with 2000 allowed; the reason names the user and the queue.
func TestPendingReasonUserLimit(t *testing.T) {
	s := newTestScheduler(t, WithPolicyConfig("queues", limitsConfig))
	rm := newFakeRM()
	const rmID = "rm-pending-user"
	setUp(t, s, rmID, rm, "app-1", "root.a", "node-1")
	if err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{
		ask("app-1", "ask-1", 1000, 1), ask("app-1", "ask-2", 1000, 1), ask("app-1", "ask-3", 1000, 1),
	}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "2 allocations", func() bool { return rm.allocationCount() == 2 })

	reasons, err := s.PendingReasons("", "app-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(reasons) != 1 {
		t.Fatalf("want only the waiting ask listed, got %v", reasons)
	}
	var key string
	for k := range reasons {
		key = k
	}
	r := waitReason(t, s, "app-1", key, CauseUserLimit)
	if r.Scope != "user" || r.Name != "alice" || r.Queue != "root" || r.Resource != "memory" ||
		r.Asked != 1000 || r.Free != 0 {
		t.Errorf("user limit: %+v", r)
	}
	if !strings.Contains(r.Message, "alice") {
		t.Errorf("message %q does not name the user", r.Message)
	}
}

func TestPendingReasonsOfUnknownApplication(t *testing.T) {
	s := newTestScheduler(t)
	register(t, s, "rm-none", newFakeRM())
	if _, err := s.PendingReasons("", "nope"); !errors.Is(err, ErrApplicationNotFound) {
		t.Errorf("err %v, want ErrApplicationNotFound", err)
	}
	dump := []byte(`{"partitions":[{"name":"a","applications":[{"id":"x","pending_asks":[{"allocation_key":"k"}]}]},
		{"name":"b","applications":[{"id":"x","pending_asks":[]}]}]}`)
	if _, err := PendingReasons(dump, "", "x"); err == nil || errors.Is(err, ErrApplicationNotFound) {
		t.Errorf("ambiguous id: err %v", err)
	}
	got, err := PendingReasons(dump, "a", "x")
	if err != nil || len(got) != 1 || got["k"] != nil {
		t.Errorf("untried ask: %v %v", got, err)
	}
	if _, err := PendingReasons([]byte("{"), "", "x"); err == nil {
		t.Error("bad JSON accepted")
	}
}
