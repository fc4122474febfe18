// Command simplerm is a small resource manager on top of the sicore
// scheduler core. It registers, reports three nodes, submits two
// applications with a few tasks each, prints where the scheduler placed
// them, releases them and removes the applications.
//
// Against the installed library (cargo cinstall; pkg-config finds it):
//
//	go run ./examples/simplerm
//
// Inside the checkout, against target/release:
//
//	cargo build --release          # at the repository root
//	go run -tags sicore_checkout ./examples/simplerm
package main

import (
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"

	sicore "github.com/sicore/sicore/bindings/go"
)

const rmID = "simple-rm"

// queues.yaml for the policy group "queues": two queues under root.
const queuesYAML = `
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: analytics
          - name: web
`

// rm is the resource manager's side of the scheduler interface: the
// scheduler calls these methods, from its own threads, to report back.
type rm struct {
	mu      sync.Mutex
	pending int                       // tasks not yet allocated or released
	changed chan struct{}             // poked after every allocation response
	placed  map[string]*si.Allocation // by allocation UUID
}

var _ api.ResourceManagerCallback = (*rm)(nil)

// UpdateAllocation receives new, released and rejected allocations.
func (r *rm) UpdateAllocation(resp *si.AllocationResponse) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range resp.New {
		fmt.Printf("allocated %-12s on %s in %s\n", a.AllocationKey, a.NodeID, a.QueueName)
		r.placed[a.UUID] = a
		r.pending--
	}
	for _, rel := range resp.Released {
		fmt.Printf("released  %-12s (%s)\n", rel.UUID[:8], rel.TerminationType)
		delete(r.placed, rel.UUID)
		r.pending--
	}
	for _, rej := range resp.Rejected {
		fmt.Printf("rejected  %-12s: %s\n", rej.AllocationKey, rej.Reason)
		r.pending--
	}
	select { // never block a callback: the scheduler waits for it
	case r.changed <- struct{}{}:
	default:
	}
	return nil
}

// UpdateApplication learns whether applications were accepted.
func (r *rm) UpdateApplication(resp *si.ApplicationResponse) error {
	for _, a := range resp.Accepted {
		fmt.Printf("application %s accepted\n", a.ApplicationID)
	}
	for _, a := range resp.Rejected {
		fmt.Printf("application %s rejected: %s\n", a.ApplicationID, a.Reason)
	}
	return nil
}

// UpdateNode learns whether nodes were accepted.
func (r *rm) UpdateNode(resp *si.NodeResponse) error {
	for _, n := range resp.Accepted {
		fmt.Printf("node %s accepted\n", n.NodeID)
	}
	return nil
}

// Predicates lets the RM veto a node for a task; here every node fits.
func (r *rm) Predicates(*si.PredicatesArgs) error { return nil }

// ReSyncSchedulerCache has nothing to resync in this example.
func (r *rm) ReSyncSchedulerCache(*si.ReSyncSchedulerCacheArgs) error { return nil }

// SendEvent ignores the scheduler's events.
func (r *rm) SendEvent([]*si.EventRecord) {}

// UpdateContainerSchedulingState ignores scheduling-state updates.
func (r *rm) UpdateContainerSchedulingState(*si.UpdateContainerSchedulingStateRequest) {
}

// UpdateConfiguration accepts any configuration change.
func (r *rm) UpdateConfiguration(*si.UpdateConfigurationRequest) *si.UpdateConfigurationResponse {
	return &si.UpdateConfigurationResponse{Success: true}
}

// waitUntilSettled blocks until every submitted task was answered.
func (r *rm) waitUntilSettled() {
	for {
		r.mu.Lock()
		done := r.pending <= 0
		r.mu.Unlock()
		if done {
			return
		}
		<-r.changed
	}
}

func resources(memoryMB, vcores int64) *si.Resource {
	return &si.Resource{Resources: map[string]*si.Quantity{
		"memory": {Value: memoryMB},
		"vcore":  {Value: vcores},
	}}
}

func main() {
	// The library's warnings and errors go to stderr (process-wide).
	sicore.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, nil)), slog.LevelWarn)

	// The one line that differs from using the YuniKorn core.
	sched, err := sicore.New(sicore.WithPolicyConfig("queues", queuesYAML))
	if err != nil {
		fail(err)
	}
	defer sched.Close()
	var scheduler api.SchedulerAPI = sched

	r := &rm{changed: make(chan struct{}, 1), placed: map[string]*si.Allocation{}}
	_, err = scheduler.RegisterResourceManager(&si.RegisterResourceManagerRequest{
		RmID: rmID, PolicyGroup: "queues", Version: "0.12"}, r)
	if err != nil {
		fail(err)
	}

	var nodes []*si.NodeInfo
	for _, id := range []string{"node-a", "node-b", "node-c"} {
		nodes = append(nodes, &si.NodeInfo{NodeID: id, Action: si.NodeInfo_CREATE,
			SchedulableResource: resources(8192, 4)})
	}
	check(scheduler.UpdateNode(&si.NodeRequest{RmID: rmID, Nodes: nodes}))

	apps := map[string]string{"report": "root.analytics", "frontend": "root.web"}
	var newApps []*si.AddApplicationRequest
	for app, queue := range apps {
		newApps = append(newApps, &si.AddApplicationRequest{ApplicationID: app, QueueName: queue,
			PartitionName: "default", Ugi: &si.UserGroupInformation{User: "alice"}})
	}
	check(scheduler.UpdateApplication(&si.ApplicationRequest{RmID: rmID, New: newApps}))

	// Three tasks per application.
	var asks []*si.AllocationAsk
	for app := range apps {
		for i := 1; i <= 3; i++ {
			asks = append(asks, &si.AllocationAsk{AllocationKey: fmt.Sprintf("%s-%d", app, i),
				ApplicationID: app, PartitionName: "default", ResourceAsk: resources(2048, 1), MaxAllocations: 1})
		}
	}
	r.mu.Lock()
	r.pending = len(asks)
	r.mu.Unlock()
	check(scheduler.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: asks}))
	r.waitUntilSettled()

	// The tasks finish: release every allocation by UUID.
	var releases []*si.AllocationRelease
	r.mu.Lock()
	for uuid, a := range r.placed {
		releases = append(releases, &si.AllocationRelease{PartitionName: "default",
			ApplicationID: a.ApplicationID, UUID: uuid, TerminationType: si.TerminationType_STOPPED_BY_RM})
	}
	r.pending = len(releases)
	r.mu.Unlock()
	check(scheduler.UpdateAllocation(&si.AllocationRequest{RmID: rmID,
		Releases: &si.AllocationReleasesRequest{AllocationsToRelease: releases}}))
	r.waitUntilSettled()

	var remove []*si.RemoveApplicationRequest
	for app := range apps {
		remove = append(remove, &si.RemoveApplicationRequest{ApplicationID: app, PartitionName: "default"})
	}
	check(scheduler.UpdateApplication(&si.ApplicationRequest{RmID: rmID, Remove: remove}))

	dump, err := sched.StateDump()
	check(err)
	fmt.Printf("state dump: %d bytes of JSON\n", len(dump))
}

func check(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "simplerm:", err)
	os.Exit(1)
}
