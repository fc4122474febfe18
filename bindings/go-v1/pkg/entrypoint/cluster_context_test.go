package entrypoint

import (
	"testing"
	"time"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/common"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
)

// eventually polls cond for up to 10 s, as the k8shim's tests poll the core.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func mem(v int64) *si.Resource {
	return &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: v}, "vcore": {Value: 10}}}
}

// TestClusterContextAsTheK8shimTestsReadIt: ServiceContext.Scheduler's
// GetClusterContext answers what the k8shim's MockScheduler asks of the
// YuniKorn core: partitions by "[rmID]name", applications with their
// state, requests and allocations, nodes with their foreign allocations;
// a PartitionContext kept across calls sees later changes; unknown names
// give nil.
func TestClusterContextAsTheK8shimTestsReadIt(t *testing.T) {
	t.Setenv(EnvRESTAddress, "off")
	ctx := StartAllServices()
	if ctx.Scheduler == nil {
		t.Fatal("no scheduler")
	}
	defer ctx.StopAll()
	rm := &nodeRM{answered: map[string]bool{}}
	if _, err := ctx.RMProxy.RegisterResourceManager(&si.RegisterResourceManagerRequest{
		RmID: "mycluster", Version: "1.9.0", PolicyGroup: "queues",
		Config: "partitions:\n  - name: default\n    placementrules:\n      - name: provided\n        create: true\n    queues:\n      - name: root\n        submitacl: '*'\n",
	}, rm); err != nil {
		t.Fatalf("RegisterResourceManager: %v", err)
	}
	cc := ctx.Scheduler.GetClusterContext()
	const full = "[mycluster]default"
	part := cc.GetPartition(full)
	if part == nil || cc.GetPartition("default") == nil {
		t.Fatal("partition not found by its full or its bare name")
	}
	if cc.GetPartition("[other]default") != nil || cc.GetPartition("nope") != nil {
		t.Error("a partition of another RM or an unknown name was found")
	}
	if _, ok := cc.GetPartitionMapClone()[full]; !ok {
		t.Errorf("partition map %v lacks %s", cc.GetPartitionMapClone(), full)
	}

	if err := ctx.RMProxy.UpdateNode(&si.NodeRequest{RmID: "mycluster", Nodes: []*si.NodeInfo{{
		NodeID: "n1", Action: si.NodeInfo_CREATE, SchedulableResource: &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: 1000}, "vcore": {Value: 1000}}},
		Attributes: map[string]string{"si.io/hostname": "n1"},
	}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the node in the core", func() bool { return len(part.GetNodes()) == 1 })
	if err := ctx.RMProxy.UpdateApplication(&si.ApplicationRequest{RmID: "mycluster", New: []*si.AddApplicationRequest{{
		ApplicationID: "app-1", QueueName: "root.a", PartitionName: "default",
		Ugi: &si.UserGroupInformation{User: "alice", Groups: []string{"dev"}},
	}}}); err != nil {
		t.Fatal(err)
	}
	// One ask that fits, one that never does, and a foreign pod on n1.
	if err := ctx.RMProxy.UpdateAllocation(&si.AllocationRequest{RmID: "mycluster", Allocations: []*si.Allocation{
		{AllocationKey: "fits", ApplicationID: "app-1", PartitionName: "default", ResourcePerAlloc: mem(300)},
		{AllocationKey: "huge", ApplicationID: "app-1", PartitionName: "default", ResourcePerAlloc: mem(5000)},
		{AllocationKey: "foreign-1", NodeID: "n1", PartitionName: "default", ResourcePerAlloc: mem(200),
			AllocationTags: map[string]string{common.Foreign: common.AllocTypeDefault}},
	}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "app-1 running with one allocation", func() bool {
		app := cc.GetApplication("app-1", full)
		return app != nil && app.CurrentState() == "Running" && len(app.GetAllAllocations()) == 1
	})
	app := part.GetApplication("app-1")
	if app.ApplicationID != "app-1" || app.GetQueuePath() != "root.a" || app.GetUser() != "alice" {
		t.Errorf("app-1: id %q queue %q user %q", app.ApplicationID, app.GetQueuePath(), app.GetUser())
	}
	a := app.GetAllAllocations()[0]
	if a.GetAllocationKey() != "fits" || a.GetNodeID() != "n1" || a.GetAllocatedResource().Resources["memory"] != 300 {
		t.Errorf("allocation %q on %q holding %v", a.GetAllocationKey(), a.GetNodeID(), a.GetAllocatedResource())
	}
	reqs := app.GetAllRequests()
	if len(reqs) != 1 || reqs[0].GetAllocationKey() != "huge" || reqs[0].IsAllocated() {
		t.Errorf("requests %v, want the one that does not fit", reqs)
	}
	eventually(t, "the foreign allocation on n1", func() bool {
		n := cc.GetNode("n1", full)
		return n != nil && len(n.GetForeignAllocations()) == 1
	})
	n := cc.GetNode("n1", full)
	f := n.GetForeignAllocations()[0]
	if f.GetAllocationKey() != "foreign-1" || !f.IsForeign() || f.GetAllocatedResource().ToProto().Resources["memory"].Value != 200 {
		t.Errorf("foreign allocation %q (%v) holding %v", f.GetAllocationKey(), f.IsForeign(), f.GetAllocatedResource())
	}
	if n.GetAttribute("si.io/hostname") != "n1" || n.GetCapacity().Resources["memory"] != 1000 {
		t.Errorf("node attributes or capacity: %q %v", n.GetAttribute("si.io/hostname"), n.GetCapacity())
	}
	if cc.GetApplication("app-2", full) != nil || cc.GetNode("n2", full) != nil || cc.GetApplication("app-1", "[x]y") != nil {
		t.Error("an unknown application, node or partition was found")
	}

	// The kept PartitionContext sees the application go.
	if err := ctx.RMProxy.UpdateApplication(&si.ApplicationRequest{RmID: "mycluster", Remove: []*si.RemoveApplicationRequest{{
		ApplicationID: "app-1", PartitionName: "default",
	}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "app-1 gone or completing", func() bool {
		a := part.GetApplication("app-1")
		return a == nil || len(a.GetAllAllocations()) == 0
	})
}
