// Command gorm is a resource manager in its own module, outside the sicore
// checkout: scripts/install-test.sh builds it against the Go binding as an
// ordinary module dependency (served from a local module proxy) and the
// pkg-config-installed libsicore, dynamically and fully static. It runs
// one scheduling round and checks the library's log records reach zap, the
// logger YuniKorn RMs use, through slog.Default() with no SetLogger call.
package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	sicore "github.com/sicore/sicore/bindings/go"
)

const rmID = "gorm"

type rm struct{ allocated chan *si.Allocation }

func (r *rm) UpdateAllocation(resp *si.AllocationResponse) error {
	for _, a := range resp.New {
		r.allocated <- a
	}
	return nil
}
func (r *rm) UpdateApplication(*si.ApplicationResponse) error         { return nil }
func (r *rm) UpdateNode(*si.NodeResponse) error                       { return nil }
func (r *rm) Predicates(*si.PredicatesArgs) error                     { return nil }
func (r *rm) ReSyncSchedulerCache(*si.ReSyncSchedulerCacheArgs) error { return nil }
func (r *rm) SendEvent([]*si.EventRecord)                             {}
func (r *rm) UpdateContainerSchedulingState(*si.UpdateContainerSchedulingStateRequest) {
}
func (r *rm) UpdateConfiguration(*si.UpdateConfigurationRequest) *si.UpdateConfigurationResponse {
	return &si.UpdateConfigurationResponse{Success: true}
}

func res(memory, vcore int64) *si.Resource {
	return &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: memory}, "vcore": {Value: vcore}}}
}

func main() {
	// The RM's zap logger, bridged to slog as its default. The observer
	// core keeps the records so this program can check them; a real RM
	// passes its own core (zap.L().Core()).
	core, logs := observer.New(zapcore.InfoLevel)
	zap.ReplaceGlobals(zap.New(core))
	slog.SetDefault(slog.New(zapslog.NewHandler(zap.L().Core())))

	sched, err := sicore.New()
	check(err)
	defer sched.Close()
	r := &rm{allocated: make(chan *si.Allocation, 1)}
	_, err = sched.RegisterResourceManager(&si.RegisterResourceManagerRequest{RmID: rmID, PolicyGroup: "queues"}, r)
	check(err)
	check(sched.UpdateNode(&si.NodeRequest{RmID: rmID, Nodes: []*si.NodeInfo{{
		NodeID: "node-1", Action: si.NodeInfo_CREATE, SchedulableResource: res(4096, 4)}}}))
	check(sched.UpdateApplication(&si.ApplicationRequest{RmID: rmID, New: []*si.AddApplicationRequest{{
		ApplicationID: "app-1", QueueName: "root.default", PartitionName: "default",
		Ugi: &si.UserGroupInformation{User: "alice"}}}}))
	check(sched.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{{
		AllocationKey: "task-1", ApplicationID: "app-1", PartitionName: "default",
		ResourceAsk: res(1024, 1), MaxAllocations: 1}}}))

	select {
	case a := <-r.allocated:
		fmt.Printf("sicore %s: %s allocated on %s\n", sicore.Version(), a.AllocationKey, a.NodeID)
	case <-time.After(60 * time.Second): // a bound for a hung run, not a speed check
		fail("no allocation within 60 s")
	}
	if n := logs.FilterMessageSnippet("RM " + rmID + " registered").Len(); n != 1 {
		fail(fmt.Sprintf("zap saw %d registration records from the library, want 1", n))
	}
	fmt.Println("the library's log records reached zap through slog.Default()")
}

func check(err error) {
	if err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "gorm:", msg)
	os.Exit(1)
}
