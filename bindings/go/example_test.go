package sicore_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"

	sicore "github.com/sicore/sicore/bindings/go"
)

// printRM is a minimal resource manager callback: it reports each new
// allocation on a channel and accepts everything else.
type printRM struct {
	allocated chan *si.Allocation
}

func (r printRM) UpdateAllocation(resp *si.AllocationResponse) error {
	for _, a := range resp.New {
		r.allocated <- a
	}
	return nil
}
func (printRM) UpdateApplication(*si.ApplicationResponse) error         { return nil }
func (printRM) UpdateNode(*si.NodeResponse) error                       { return nil }
func (printRM) Predicates(*si.PredicatesArgs) error                     { return nil }
func (printRM) ReSyncSchedulerCache(*si.ReSyncSchedulerCacheArgs) error { return nil }
func (printRM) SendEvent([]*si.EventRecord)                             {}
func (printRM) UpdateContainerSchedulingState(*si.UpdateContainerSchedulingStateRequest) {
}
func (printRM) UpdateConfiguration(*si.UpdateConfigurationRequest) *si.UpdateConfigurationResponse {
	return &si.UpdateConfigurationResponse{Success: true}
}

// A complete round trip: register, add a node and an application, ask for
// resources and receive the allocation through the callback.
func Example() {
	sched, err := sicore.New() // embedded default configuration
	if err != nil {
		panic(err)
	}
	defer sched.Close()

	var core api.SchedulerAPI = sched // the upstream interface
	rm := printRM{allocated: make(chan *si.Allocation, 1)}
	if _, err := core.RegisterResourceManager(&si.RegisterResourceManagerRequest{
		RmID: "example", PolicyGroup: "queues", Version: "0.12"}, rm); err != nil {
		panic(err)
	}
	res := func(memory, vcore int64) *si.Resource {
		return &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: memory}, "vcore": {Value: vcore}}}
	}
	_ = core.UpdateNode(&si.NodeRequest{RmID: "example", Nodes: []*si.NodeInfo{{
		NodeID: "node-1", Action: si.NodeInfo_CREATE, SchedulableResource: res(4096, 4)}}})
	_ = core.UpdateApplication(&si.ApplicationRequest{RmID: "example", New: []*si.AddApplicationRequest{{
		ApplicationID: "app-1", QueueName: "root.sandbox", PartitionName: "default",
		Ugi: &si.UserGroupInformation{User: "alice"}}}})
	_ = core.UpdateAllocation(&si.AllocationRequest{RmID: "example", Asks: []*si.AllocationAsk{{
		AllocationKey: "task-1", ApplicationID: "app-1", PartitionName: "default",
		ResourceAsk: res(512, 1), MaxAllocations: 1}}})

	a := <-rm.allocated
	fmt.Println(a.AllocationKey, "on", a.NodeID, "in", a.QueueName)
	// Output: task-1 on node-1 in root.sandbox
}

// Options map to the library's SchedulerOptions; in-memory policy
// configurations win over files in the configuration directory.
func ExampleNew() {
	sched, err := sicore.New(
		sicore.WithConfigDir("/etc/yunikorn"),
		sicore.WithPolicyConfig("queues", `
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: batch
`),
		sicore.WithSchedulingInterval(50*time.Millisecond),
		sicore.WithAppCompletingTimeout(5*time.Second),
	)
	if err != nil {
		panic(err)
	}
	defer sched.Close()
	fmt.Println("started")
	// Output: started
}

// Library errors keep their status and message.
func ExampleError() {
	sched, err := sicore.New()
	if err != nil {
		panic(err)
	}
	defer sched.Close()
	err = sched.UpdateNode(&si.NodeRequest{RmID: "never-registered"})
	fmt.Println(errors.Is(err, sicore.ErrRejected))
	var e *sicore.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, "-", e.Message)
	}
	// Output:
	// true
	// rejected - received NodeRequest, but RmID="never-registered" not registered
}

// SetLogger routes the library's records, for every Scheduler in the
// process, to a slog logger.
func ExampleSetLogger() {
	sicore.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, nil)), slog.LevelInfo)
	defer sicore.SetLogger(nil, slog.LevelInfo) // back to the default, slog.Default()
}

// vetoRM refuses every node in Predicates.
type vetoRM struct{ printRM }

func (vetoRM) Predicates(*si.PredicatesArgs) error { return errors.New("no node fits") }

// With WithoutPredicates the library never asks Predicates (here one that
// would refuse every node), which spares an RM with no node filters two
// calls per decision; it still gets one ReSyncSchedulerCache per batch,
// before the UpdateAllocation.
func ExampleWithoutPredicates() {
	sched, err := sicore.New(sicore.WithoutPredicates())
	if err != nil {
		panic(err)
	}
	defer sched.Close()
	rm := vetoRM{printRM{allocated: make(chan *si.Allocation, 1)}}
	if _, err := sched.RegisterResourceManager(&si.RegisterResourceManagerRequest{
		RmID: "no-filters", PolicyGroup: "queues", Version: "0.12"}, rm); err != nil {
		panic(err)
	}
	res := &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: 512}, "vcore": {Value: 1}}}
	_ = sched.UpdateNode(&si.NodeRequest{RmID: "no-filters", Nodes: []*si.NodeInfo{{
		NodeID: "node-1", Action: si.NodeInfo_CREATE, SchedulableResource: res}}})
	_ = sched.UpdateApplication(&si.ApplicationRequest{RmID: "no-filters", New: []*si.AddApplicationRequest{{
		ApplicationID: "app-1", QueueName: "root.sandbox", PartitionName: "default",
		Ugi: &si.UserGroupInformation{User: "alice"}}}})
	_ = sched.UpdateAllocation(&si.AllocationRequest{RmID: "no-filters", Asks: []*si.AllocationAsk{{
		AllocationKey: "task-1", ApplicationID: "app-1", PartitionName: "default",
		ResourceAsk: res, MaxAllocations: 1}}})

	select {
	case a := <-rm.allocated:
		fmt.Println(a.AllocationKey, "on", a.NodeID)
	case <-time.After(10 * time.Second):
		fmt.Println("not allocated")
	}
	// Output: task-1 on node-1
}
