package sicore

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
)

// cacheRM answers Predicates from a cache that only ReSyncSchedulerCache
// feeds, as the Kubernetes shim does: a node that already holds an assumed
// allocation is refused.
type cacheRM struct {
	*fakeRM
	cacheMu     sync.Mutex
	cache       map[string]string // allocation key -> node
	unannounced []string          // keys announced before their ReSync
}

func (c *cacheRM) ReSyncSchedulerCache(args *si.ReSyncSchedulerCacheArgs) error {
	c.cacheMu.Lock()
	defer c.cacheMu.Unlock()
	for _, f := range args.ForgetAllocations {
		delete(c.cache, f.AllocationKey)
	}
	for _, a := range args.AssumedAllocations {
		c.cache[a.AllocationKey] = a.NodeID
	}
	return nil
}

func (c *cacheRM) Predicates(args *si.PredicatesArgs) error {
	c.cacheMu.Lock()
	defer c.cacheMu.Unlock()
	for _, node := range c.cache {
		if node == args.NodeID {
			return fmt.Errorf("node %s already holds an assumed allocation", node)
		}
	}
	return nil
}

func (c *cacheRM) UpdateAllocation(r *si.AllocationResponse) error {
	c.cacheMu.Lock()
	for _, a := range r.New {
		if _, ok := c.cache[a.AllocationKey]; !ok {
			c.unannounced = append(c.unannounced, a.AllocationKey)
		}
	}
	c.cacheMu.Unlock()
	return c.fakeRM.UpdateAllocation(r)
}

// TestPredicatesSeeEarlierAssumptions is issue 11's reproduction: binpacking,
// three nodes, three asks, a predicate that refuses any node holding an
// assumed allocation. Each predicate call must see the earlier decisions.
func TestPredicatesSeeEarlierAssumptions(t *testing.T) {
	const yaml = `
partitions:
  - name: default
    nodesortpolicy: {type: binpacking}
    placementrules: [{name: provided, create: true}]
    queues: [{name: root, submitacl: "*"}]
`
	s := newTestScheduler(t, WithPolicyConfig("queues", yaml))
	rm := &cacheRM{fakeRM: newFakeRM(), cache: map[string]string{}}
	const rmID = "rm-resync"
	register(t, s, rmID, rm)
	if err := s.UpdateNode(nodeRequest(rmID, 100000, 1000, "n1", "n2", "n3")); err != nil {
		t.Fatalf("UpdateNode: %v", err)
	}
	waitFor(t, "nodes accepted", func() (ok bool) {
		rm.read(func() { ok = len(rm.acceptedNodes) == 3 })
		return ok
	})
	if err := s.UpdateApplication(appRequest(rmID, "app-1", "root.a")); err != nil {
		t.Fatalf("UpdateApplication: %v", err)
	}
	waitFor(t, "application accepted", func() (ok bool) {
		rm.read(func() { ok = rm.acceptedApps["app-1"] })
		return ok
	})
	req := &si.AllocationRequest{RmID: rmID}
	for _, k := range []string{"k1", "k2", "k3"} {
		req.Asks = append(req.Asks, ask("app-1", k, 100, 1))
	}
	if err := s.UpdateAllocation(req); err != nil {
		t.Fatalf("UpdateAllocation: %v", err)
	}
	waitFor(t, "3 allocations", func() bool { return rm.allocationCount() == 3 })
	var placed []string
	rm.read(func() {
		for _, a := range rm.allocations {
			placed = append(placed, a.AllocationKey+"@"+a.NodeID)
		}
	})
	sort.Strings(placed)
	want := []string{"k1@n1", "k2@n2", "k3@n3"}
	if fmt.Sprint(placed) != fmt.Sprint(want) {
		t.Errorf("placed %v, want %v", placed, want)
	}
	rm.cacheMu.Lock()
	defer rm.cacheMu.Unlock()
	if len(rm.unannounced) != 0 {
		t.Errorf("UpdateAllocation announced %v before their ReSync", rm.unannounced)
	}
}

// countingCacheRM is a cacheRM that counts its Predicates calls.
type countingCacheRM struct {
	cacheRM
	predicates atomic.Int64
}

func (c *countingCacheRM) Predicates(args *si.PredicatesArgs) error {
	c.predicates.Add(1)
	return c.cacheRM.Predicates(args)
}

// TestWithoutPredicates: the same RM, its Predicates refusing any node
// that holds an assumed allocation, on a scheduler started with
// WithoutPredicates. Predicates is never asked, so binpacking puts all
// three asks on the first node; every allocation's ReSync still reaches
// the RM before the UpdateAllocation that announces it.
func TestWithoutPredicates(t *testing.T) {
	const yaml = `
partitions:
  - name: default
    nodesortpolicy: {type: binpacking}
    placementrules: [{name: provided, create: true}]
    queues: [{name: root, submitacl: "*"}]
`
	s := newTestScheduler(t, WithPolicyConfig("queues", yaml), WithoutPredicates())
	rm := &countingCacheRM{cacheRM: cacheRM{fakeRM: newFakeRM(), cache: map[string]string{}}}
	const rmID = "rm-nopredicates"
	register(t, s, rmID, rm)
	if err := s.UpdateNode(nodeRequest(rmID, 100000, 1000, "n1", "n2", "n3")); err != nil {
		t.Fatalf("UpdateNode: %v", err)
	}
	if err := s.UpdateApplication(appRequest(rmID, "app-1", "root.a")); err != nil {
		t.Fatalf("UpdateApplication: %v", err)
	}
	waitFor(t, "application accepted", func() (ok bool) {
		rm.read(func() { ok = rm.acceptedApps["app-1"] && len(rm.acceptedNodes) == 3 })
		return ok
	})
	req := &si.AllocationRequest{RmID: rmID}
	for _, k := range []string{"k1", "k2", "k3"} {
		req.Asks = append(req.Asks, ask("app-1", k, 100, 1))
	}
	if err := s.UpdateAllocation(req); err != nil {
		t.Fatalf("UpdateAllocation: %v", err)
	}
	waitFor(t, "3 allocations", func() bool { return rm.allocationCount() == 3 })
	rm.read(func() {
		for _, a := range rm.allocations {
			if a.NodeID != "n1" {
				t.Errorf("%s placed on %s; without predicates binpacking fills n1 first", a.AllocationKey, a.NodeID)
			}
		}
	})
	if n := rm.predicates.Load(); n != 0 {
		t.Errorf("Predicates called %d times", n)
	}
	rm.cacheMu.Lock()
	defer rm.cacheMu.Unlock()
	if len(rm.unannounced) != 0 {
		t.Errorf("UpdateAllocation announced %v before their ReSync", rm.unannounced)
	}
	if len(rm.cache) != 3 {
		t.Errorf("the RM's cache holds %v, want the 3 assumed allocations", rm.cache)
	}
}
