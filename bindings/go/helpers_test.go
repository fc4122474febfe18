package sicore

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
)

// fakeRM records everything the scheduler tells it. Hooks, when set, run
// first and may fail the callback.
type fakeRM struct {
	mu             sync.Mutex
	allocations    map[string]*si.Allocation // by UUID
	released       []*si.AllocationRelease
	rejectedAsks   []*si.RejectedAllocationAsk
	acceptedApps   map[string]bool
	rejectedApps   map[string]string
	updatedApps    []*si.UpdatedApplication
	acceptedNodes  map[string]bool
	rejectedNodes  map[string]string
	events         []*si.EventRecord
	predicateCalls int

	onAllocation func(*si.AllocationResponse) error
	onNode       func(*si.NodeResponse) error
	onPredicates func(*si.PredicatesArgs) error
}

var _ api.ResourceManagerCallback = (*fakeRM)(nil)

func newFakeRM() *fakeRM {
	return &fakeRM{
		allocations:   make(map[string]*si.Allocation),
		acceptedApps:  make(map[string]bool),
		rejectedApps:  make(map[string]string),
		acceptedNodes: make(map[string]bool),
		rejectedNodes: make(map[string]string),
	}
}

func (f *fakeRM) UpdateAllocation(r *si.AllocationResponse) error {
	if f.onAllocation != nil {
		if err := f.onAllocation(r); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range r.New {
		f.allocations[a.UUID] = a
	}
	f.released = append(f.released, r.Released...)
	f.rejectedAsks = append(f.rejectedAsks, r.Rejected...)
	return nil
}

func (f *fakeRM) UpdateApplication(r *si.ApplicationResponse) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range r.Accepted {
		f.acceptedApps[a.ApplicationID] = true
	}
	for _, a := range r.Rejected {
		f.rejectedApps[a.ApplicationID] = a.Reason
	}
	f.updatedApps = append(f.updatedApps, r.Updated...)
	return nil
}

func (f *fakeRM) UpdateNode(r *si.NodeResponse) error {
	if f.onNode != nil {
		if err := f.onNode(r); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range r.Accepted {
		f.acceptedNodes[n.NodeID] = true
	}
	for _, n := range r.Rejected {
		f.rejectedNodes[n.NodeID] = n.Reason
	}
	return nil
}

func (f *fakeRM) Predicates(args *si.PredicatesArgs) error {
	f.mu.Lock()
	f.predicateCalls++
	f.mu.Unlock()
	if f.onPredicates != nil {
		return f.onPredicates(args)
	}
	return nil
}

func (f *fakeRM) ReSyncSchedulerCache(*si.ReSyncSchedulerCacheArgs) error { return nil }

func (f *fakeRM) SendEvent(events []*si.EventRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, events...)
}

func (f *fakeRM) UpdateContainerSchedulingState(*si.UpdateContainerSchedulingStateRequest) {}

func (f *fakeRM) UpdateConfiguration(*si.UpdateConfigurationRequest) *si.UpdateConfigurationResponse {
	return &si.UpdateConfigurationResponse{Success: true}
}

// read runs fn under the recorder's lock.
func (f *fakeRM) read(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

func (f *fakeRM) allocationCount() (n int) {
	f.read(func() { n = len(f.allocations) })
	return n
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func init() {
	if os.Getenv("SICORE_GO_GOEXIT_GUARD") == "off" {
		guardLogs = false
	}
}

// newTestScheduler starts a scheduler that is closed when the test ends.
//
// SICORE_GO_GOEXIT_GUARD=off runs the tests (and the log handler, see
// init) without the Goexit guard, as
// a resource manager's binary runs by default (tests that need the guard
// ask for it themselves).
func newTestScheduler(t testing.TB, opts ...Option) *Scheduler {
	t.Helper()
	if os.Getenv("SICORE_GO_GOEXIT_GUARD") == "off" {
		opts = append([]Option{WithGoexitGuard(false)}, opts...)
	}
	s, err := New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func register(t testing.TB, s *Scheduler, rmID string, cb api.ResourceManagerCallback) {
	t.Helper()
	_, err := s.RegisterResourceManager(&si.RegisterResourceManagerRequest{
		RmID: rmID, PolicyGroup: "queues", Version: "test",
	}, cb)
	if err != nil {
		t.Fatalf("RegisterResourceManager: %v", err)
	}
}

func resource(memory, vcore int64) *si.Resource {
	return &si.Resource{Resources: map[string]*si.Quantity{
		"memory": {Value: memory},
		"vcore":  {Value: vcore},
	}}
}

func nodeRequest(rmID string, memory, vcore int64, ids ...string) *si.NodeRequest {
	req := &si.NodeRequest{RmID: rmID}
	for _, id := range ids {
		req.Nodes = append(req.Nodes, &si.NodeInfo{
			NodeID:              id,
			Action:              si.NodeInfo_CREATE,
			SchedulableResource: resource(memory, vcore),
			Attributes:          map[string]string{"si/node-partition": "default"},
		})
	}
	return req
}

func appRequest(rmID, appID, queue string) *si.ApplicationRequest {
	return &si.ApplicationRequest{RmID: rmID, New: []*si.AddApplicationRequest{{
		ApplicationID: appID,
		QueueName:     queue,
		PartitionName: "default",
		Ugi:           &si.UserGroupInformation{User: "alice", Groups: []string{"dev"}},
	}}}
}

func ask(appID, key string, memory, vcore int64) *si.AllocationAsk {
	return &si.AllocationAsk{
		AllocationKey:  key,
		ApplicationID:  appID,
		PartitionName:  "default",
		ResourceAsk:    resource(memory, vcore),
		MaxAllocations: 1,
	}
}

// setUp registers rm with nodes and one application and waits until all
// were accepted.
func setUp(t testing.TB, s *Scheduler, rmID string, rm *fakeRM, appID, queue string, nodes ...string) {
	t.Helper()
	register(t, s, rmID, rm)
	if err := s.UpdateNode(nodeRequest(rmID, 100000, 1000, nodes...)); err != nil {
		t.Fatalf("UpdateNode: %v", err)
	}
	waitFor(t, "nodes accepted", func() (ok bool) {
		rm.read(func() { ok = len(rm.acceptedNodes) == len(nodes) })
		return ok
	})
	if err := s.UpdateApplication(appRequest(rmID, appID, queue)); err != nil {
		t.Fatalf("UpdateApplication: %v", err)
	}
	waitFor(t, "application accepted", func() (ok bool) {
		rm.read(func() { ok = rm.acceptedApps[appID] })
		return ok
	})
}
