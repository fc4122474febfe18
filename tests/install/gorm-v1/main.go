// Command gorm-v1 is a resource manager written for yunikorn-core v1.8, in
// its own module outside the sicore checkout: scripts/install-test.sh
// switches it to sicore's drop-in (bindings/go-v1) with one replace line
// and builds it against the pkg-config-installed libsicore (the drop-in's
// default link mode), dynamically and fully static. It starts the core as
// the k8shim's main does, registers, creates a node, places one pod, checks
// that the library's log records reach the zap logger it passed, and
// stops.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/apache/yunikorn-core/pkg/entrypoint"
	corelocking "github.com/apache/yunikorn-core/pkg/locking"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

const (
	rmID   = "gorm-v1"
	queues = `
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
`
)

type rm struct {
	nodes     chan string
	apps      chan string
	allocated chan *si.Allocation
}

func (r *rm) UpdateAllocation(resp *si.AllocationResponse) error {
	for _, a := range resp.New {
		r.allocated <- a
	}
	return nil
}

func (r *rm) UpdateApplication(resp *si.ApplicationResponse) error {
	for _, a := range resp.Accepted {
		r.apps <- a.ApplicationID
	}
	return nil
}

func (r *rm) UpdateNode(resp *si.NodeResponse) error {
	for _, n := range resp.Accepted {
		r.nodes <- n.NodeID
	}
	return nil
}

func (r *rm) Predicates(*si.PredicatesArgs) error { return nil }
func (r *rm) PreemptionPredicates(*si.PreemptionPredicatesArgs) *si.PreemptionPredicatesResponse {
	return &si.PreemptionPredicatesResponse{Index: -1}
}
func (r *rm) SendEvent([]*si.EventRecord)                                              {}
func (r *rm) UpdateContainerSchedulingState(*si.UpdateContainerSchedulingStateRequest) {}

func fail(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
	os.Exit(1)
}

func wait[T any](what string, ch <-chan T) T {
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		fail("no answer: %s", what)
	}
	panic("unreachable")
}

func main() {
	_ = corelocking.IsTrackingEnabled() // as the k8shim's pkg/locking does
	cfg := zap.NewProductionConfig()
	core, logs := observer.New(zapcore.InfoLevel)
	serviceContext := entrypoint.StartAllServicesWithLogger(zap.New(core), &cfg)
	if serviceContext.RMProxy == nil {
		fail("no RMProxy")
	}
	var proxy api.SchedulerAPI = serviceContext.RMProxy
	cb := &rm{nodes: make(chan string, 1), apps: make(chan string, 1), allocated: make(chan *si.Allocation, 1)}
	if _, err := proxy.RegisterResourceManager(&si.RegisterResourceManagerRequest{
		RmID: rmID, Version: "1.8.0", PolicyGroup: "queues", Config: queues}, cb); err != nil {
		fail("register: %v", err)
	}
	if err := proxy.UpdateNode(&si.NodeRequest{RmID: rmID, Nodes: []*si.NodeInfo{{NodeID: "node-1",
		Action:              si.NodeInfo_CREATE,
		Attributes:          map[string]string{"si.io/hostname": "node-1", "si.io/rackname": "/rack-default"},
		SchedulableResource: &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: 1000}, "vcore": {Value: 10}}}}}}); err != nil {
		fail("node: %v", err)
	}
	fmt.Println("accepted", wait("node", cb.nodes))
	if err := proxy.UpdateApplication(&si.ApplicationRequest{RmID: rmID, New: []*si.AddApplicationRequest{{
		ApplicationID: "app-1", QueueName: "root.a", PartitionName: "default",
		Ugi: &si.UserGroupInformation{User: "alice"}}}}); err != nil {
		fail("application: %v", err)
	}
	wait("application", cb.apps)
	if err := proxy.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Allocations: []*si.Allocation{{
		AllocationKey: "pod-1", ApplicationID: "app-1",
		ResourcePerAlloc: &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: 10}, "vcore": {Value: 1}}}}}}); err != nil {
		fail("allocation: %v", err)
	}
	a := wait("allocation", cb.allocated)
	if a.AllocationKey != "pod-1" || a.NodeID != "node-1" {
		fail("allocated %s on %q, want pod-1 on node-1", a.AllocationKey, a.NodeID)
	}
	fmt.Println("allocated", a.AllocationKey, "on", a.NodeID)
	if logs.FilterMessageSnippet("registered").Len() == 0 {
		fail("no library record about the registration reached zap; got %d records", logs.Len())
	}
	proxy.Stop()
	fmt.Println("stopped")
}
