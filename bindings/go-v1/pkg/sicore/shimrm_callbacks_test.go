package sicore

// The shimRM's callbacks (api.ResourceManagerCallback) and its checks.

import (
	"encoding/json"
	"fmt"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
)

// --- api.ResourceManagerCallback ---

func (rm *shimRM) UpdateAllocation(r *si.AllocationResponse) error {
	if !rm.lockContext("UpdateAllocation") {
		return fmt.Errorf("context lock not available")
	}
	defer rm.ctxLock.Unlock()
	rm.cacheLock.Lock()
	for _, a := range r.New {
		p := rm.pods[a.AllocationKey]
		switch {
		case p == nil && rm.deleted[a.AllocationKey]:
			// Placed before the core applied the release, which follows.
			rm.mu.Lock()
			rm.lateNew = append(rm.lateNew, a.AllocationKey)
			rm.mu.Unlock()
		case p == nil:
			rm.violate("new allocation for unknown pod %s", a.AllocationKey)
		case p.foreign:
			rm.violate("foreign pod %s echoed in new", a.AllocationKey)
		case a.ApplicationID != p.app:
			rm.violate("new allocation %s with application %q, want %q", a.AllocationKey, a.ApplicationID, p.app)
		default:
			if p.node == "" { // placed by the core: this is the assume
				p.phase = rm.phase
			}
			rm.assumeLocked(p, a.NodeID)
		}
	}
	for _, rel := range r.Released {
		if p := rm.pods[rel.AllocationKey]; p != nil {
			rm.forgetLocked(p)
		}
	}
	rm.cacheLock.Unlock()
	// The confirmations are counted before the releases are recorded: a
	// test that has seen a release then waits for its confirmation, and a
	// WaitGroup's Add must happen before the Wait that should see it.
	var confirm []*si.AllocationRelease
	for _, rel := range r.Released {
		if rel.TerminationType != si.TerminationType_STOPPED_BY_RM {
			confirm = append(confirm, rel)
		}
	}
	rm.confirmations.Add(len(confirm))
	rm.mu.Lock()
	rm.newAllocs = append(rm.newAllocs, r.New...)
	rm.released = append(rm.released, r.Released...)
	rm.rejected = append(rm.rejected, r.RejectedAllocations...)
	rm.mu.Unlock()
	for _, rel := range confirm {
		// The k8shim deletes the pod and confirms later, from its
		// dispatcher, never inside this callback.
		go func(key string, tt si.TerminationType) {
			defer rm.confirmations.Done()
			rm.deletePod(key, tt)
		}(rel.AllocationKey, rel.TerminationType)
	}
	return nil
}

func (rm *shimRM) UpdateApplication(r *si.ApplicationResponse) error {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	for _, a := range r.Accepted {
		rm.acceptedApps[a.ApplicationID] = true
	}
	for _, a := range r.Rejected {
		rm.rejectedApps[a.ApplicationID] = a.Reason
	}
	for _, u := range r.Updated {
		if u.State == "Starting" {
			rm.violations = append(rm.violations, "application "+u.ApplicationID+" reported Starting, not a v1 state")
		}
	}
	rm.updatedApps = append(rm.updatedApps, r.Updated...)
	return nil
}

func (rm *shimRM) UpdateNode(r *si.NodeResponse) error {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	for _, n := range r.Accepted {
		rm.nodeAnswers[n.NodeID] = append(rm.nodeAnswers[n.NodeID], "accepted")
	}
	for _, n := range r.Rejected {
		rm.nodeAnswers[n.NodeID] = append(rm.nodeAnswers[n.NodeID], "rejected: "+n.Reason)
	}
	return nil
}

func (rm *shimRM) Predicates(args *si.PredicatesArgs) error {
	rm.mu.Lock()
	rm.predicateCalls++
	rm.mu.Unlock()
	rm.cacheLock.RLock()
	defer rm.cacheLock.RUnlock()
	n := rm.nodes[args.NodeID]
	if n == nil {
		return fmt.Errorf("node %s not in the cache", args.NodeID)
	}
	if rm.maxPods > 0 && len(n.pods) >= rm.maxPods {
		return fmt.Errorf("node %s: too many pods", args.NodeID)
	}
	if p := rm.pods[args.AllocationKey]; p != nil && p.hostPort != 0 {
		if _, taken := n.ports[p.hostPort]; taken {
			return fmt.Errorf("node %s: host port %d taken", args.NodeID, p.hostPort)
		}
	}
	return nil
}

func (rm *shimRM) PreemptionPredicates(*si.PreemptionPredicatesArgs) *si.PreemptionPredicatesResponse {
	rm.mu.Lock()
	rm.preemptCalls++
	rm.mu.Unlock()
	return &si.PreemptionPredicatesResponse{Success: false, Index: -1}
}

func (rm *shimRM) SendEvent(events []*si.EventRecord) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	rm.events = append(rm.events, events...)
}

func (rm *shimRM) UpdateContainerSchedulingState(r *si.UpdateContainerSchedulingStateRequest) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	rm.schedStates = append(rm.schedStates, r)
}

func (rm *shimRM) GetStateDump() (string, error) {
	rm.mu.Lock()
	rm.stateDumps++
	rm.mu.Unlock()
	rm.cacheLock.RLock()
	defer rm.cacheLock.RUnlock()
	b, err := json.Marshal(map[string]any{"shim": "test", "pods": len(rm.pods)})
	return string(b), err
}

// --- checks ---

// nodeOf returns the node a pod is assumed on, "" if none.
func (rm *shimRM) nodeOf(key string) string {
	rm.cacheLock.RLock()
	defer rm.cacheLock.RUnlock()
	if p := rm.pods[key]; p != nil {
		return p.node
	}
	return ""
}

func (rm *shimRM) placedCount(keys ...string) int {
	n := 0
	for _, k := range keys {
		if rm.nodeOf(k) != "" {
			n++
		}
	}
	return n
}

func (rm *shimRM) releasedKeys(tt si.TerminationType) map[string]bool {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	out := make(map[string]bool)
	for _, r := range rm.released {
		if r.TerminationType == tt {
			out[r.AllocationKey] = true
		}
	}
	return out
}

func (rm *shimRM) newCount(key string) int {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	n := 0
	for _, a := range rm.newAllocs {
		if a.AllocationKey == key {
			n++
		}
	}
	return n
}

// checkClean fails the test on any recorded violation, and on a
// PreemptionPredicates call (these scenarios configure no guarantee, so
// nothing may preempt; preempt_test.go is the one that does).
func (rm *shimRM) checkClean() {
	rm.t.Helper()
	rm.confirmations.Wait()
	rm.mu.Lock()
	defer rm.mu.Unlock()
	for _, v := range rm.violations {
		rm.t.Errorf("violation: %s", v)
	}
	if rm.preemptCalls != 0 {
		rm.t.Errorf("PreemptionPredicates called %d times; nothing here should preempt", rm.preemptCalls)
	}
}
