package sicore

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/common"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
)

// shimRM is a test resource manager that behaves as the k8shim v1.8.0 does
// towards its core (the delta spec's section 4):
//
//   - it registers its nodes with CREATE_DRAIN and waits for an answer
//     per node, then sends the pods already running as allocations with a
//     node ID, then DRAIN_TO_SCHEDULABLE;
//   - it holds its context lock while it calls UpdateAllocation (and the
//     other API calls), and its UpdateAllocation callback takes that same
//     lock and assumes each new pod on its node in its scheduler cache
//     (forgets each released one);
//   - its Predicates answers from that cache: at most maxPods pods per node
//     and one pod per host port and node, so a Predicates call that comes
//     before the previous decision's UpdateAllocation returned sees a
//     stale cache, lets a second pod onto a node, and the callback records
//     the conflict as a violation;
//   - a release it did not start (PLACEHOLDER_REPLACED, TIMEOUT,
//     PREEMPTED_BY_SCHEDULER) makes it delete the pod and confirm the
//     release by key with the same termination type, asynchronously (the
//     k8shim's dispatcher);
//   - pods it does not schedule (foreign pods) are sent as allocations
//     tagged foreign, with the node and no application.
//
// Everything the core tells it is recorded; violations are checked by
// each test at its end (checkClean).
type shimRM struct {
	t       testing.TB
	s       *Scheduler
	rmID    string
	maxPods int // 0: no pod count limit per node
	// cb is what registers as the callback: the RM itself unless a
	// wrapper (hookRM) is set.
	cb api.ResourceManagerCallback

	// ctxLock is the k8shim's context lock: held around every API call
	// and taken by the UpdateAllocation callback.
	ctxLock sync.Mutex
	// phase is set by the test under ctxLock; the UpdateAllocation
	// callback reads it under the same lock, so "a pod was placed before
	// the test allowed it" is a strict check, not a timing one.
	phase string

	// cacheLock guards the scheduler cache (pods, nodes), which Predicates
	// reads without the context lock, as the k8shim's does.
	cacheLock sync.RWMutex
	pods      map[string]*shimPod
	nodes     map[string]*shimNode
	// deleted are the pods the RM deleted: a decision the core made
	// before it applied the release may still arrive, and is ignored, as
	// the k8shim ignores a new allocation of a task it no longer has.
	deleted map[string]bool

	// mu guards what is recorded below.
	mu             sync.Mutex
	nodeAnswers    map[string][]string // "accepted" or "rejected: reason", in order
	newAllocs      []*si.Allocation
	released       []*si.AllocationRelease
	rejected       []*si.RejectedAllocation
	acceptedApps   map[string]bool
	rejectedApps   map[string]string
	updatedApps    []*si.UpdatedApplication
	events         []*si.EventRecord
	schedStates    []*si.UpdateContainerSchedulingStateRequest
	violations     []string
	lateNew        []string // new allocations of pods already deleted
	predicateCalls int
	preemptCalls   int
	stateDumps     int
	confirmations  sync.WaitGroup
}

type shimPod struct {
	key, app    string
	memory      int64
	hostPort    int    // 0: none
	node        string // the node it is assumed on, "" while pending
	taskGroup   string
	placeholder bool
	foreign     bool
	phase       string // rm.phase when the core placed it
}

type shimNode struct {
	pods  map[string]bool
	ports map[int]string
}

var (
	_ api.ResourceManagerCallback = (*shimRM)(nil)
	_ api.StateDumpPlugin         = (*shimRM)(nil)
)

const shimQueues = `
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
`

func newShimRM(t testing.TB, s *Scheduler, rmID string, maxPods int) *shimRM {
	return &shimRM{
		t: t, s: s, rmID: rmID, maxPods: maxPods,
		pods:         make(map[string]*shimPod),
		nodes:        make(map[string]*shimNode),
		deleted:      make(map[string]bool),
		nodeAnswers:  make(map[string][]string),
		acceptedApps: make(map[string]bool),
		rejectedApps: make(map[string]string),
	}
}

func (rm *shimRM) violate(format string, args ...any) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	rm.violations = append(rm.violations, fmt.Sprintf(format, args...))
}

// lockContext takes the context lock in a callback. A callback that runs
// inside the RM's own API call (which holds the lock) would wait forever:
// after 20s that is recorded as a violation instead.
func (rm *shimRM) lockContext(method string) bool {
	deadline := time.Now().Add(20 * time.Second)
	for !rm.ctxLock.TryLock() {
		if time.Now().After(deadline) {
			rm.violate("%s: the context lock stayed held for 20s (a callback inside the RM's own API call?)", method)
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
	return true
}

// --- the RM's calls into the core, each under the context lock ---

func (rm *shimRM) register(config string) error {
	rm.ctxLock.Lock()
	defer rm.ctxLock.Unlock()
	_, err := rm.s.RegisterResourceManager(&si.RegisterResourceManagerRequest{
		RmID: rm.rmID, Version: "1.8.0", PolicyGroup: "queues",
		BuildInfo:   map[string]string{"buildVersion": "1.8.0", "isPluginVersion": "false"},
		Config:      config,
		ExtraConfig: map[string]string{"log.level": "INFO", "health.checkInterval": "30s"},
	}, rm.callback())
	return err
}

func (rm *shimRM) callback() api.ResourceManagerCallback {
	if rm.cb != nil {
		return rm.cb
	}
	return rm
}

func (rm *shimRM) updateConfiguration(config string) error {
	rm.ctxLock.Lock()
	defer rm.ctxLock.Unlock()
	return rm.s.UpdateConfiguration(&si.UpdateConfigurationRequest{
		RmID: rm.rmID, PolicyGroup: "queues", Config: config,
		ExtraConfig: map[string]string{"log.level": "INFO"},
	})
}

func (rm *shimRM) updateAllocation(req *si.AllocationRequest) {
	rm.t.Helper()
	rm.updateAllocationIn("", req)
}

// updateAllocationIn sets the phase (unless "") and sends req in one hold
// of the context lock, so no callback runs between the two.
func (rm *shimRM) updateAllocationIn(phase string, req *si.AllocationRequest) {
	rm.t.Helper()
	rm.ctxLock.Lock()
	defer rm.ctxLock.Unlock()
	if phase != "" {
		rm.phase = phase
	}
	req.RmID = rm.rmID
	if err := rm.s.UpdateAllocation(req); err != nil {
		rm.t.Errorf("UpdateAllocation: %v", err)
	}
}

func (rm *shimRM) updateNode(req *si.NodeRequest) {
	rm.t.Helper()
	rm.updateNodeIn("", req)
}

func (rm *shimRM) updateNodeIn(phase string, req *si.NodeRequest) {
	rm.t.Helper()
	rm.ctxLock.Lock()
	defer rm.ctxLock.Unlock()
	if phase != "" {
		rm.phase = phase
	}
	req.RmID = rm.rmID
	if err := rm.s.UpdateNode(req); err != nil {
		rm.t.Errorf("UpdateNode: %v", err)
	}
}

func quantity(memory int64) *si.Resource {
	return &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: memory}, "vcore": {Value: 1}}}
}

// registerNodes registers nodes as the k8shim does at start-up: one
// CREATE_DRAIN request, then a wait with the context lock released for
// an answer per node.
func (rm *shimRM) registerNodes(memory int64, ids ...string) {
	rm.t.Helper()
	req := &si.NodeRequest{}
	rm.cacheLock.Lock()
	for _, id := range ids {
		if rm.nodes[id] == nil {
			rm.nodes[id] = &shimNode{pods: make(map[string]bool), ports: make(map[int]string)}
		}
		req.Nodes = append(req.Nodes, &si.NodeInfo{
			NodeID: id, Action: si.NodeInfo_CREATE_DRAIN,
			Attributes:          map[string]string{"si.io/hostname": id, "si.io/rackname": "/rack-default"},
			SchedulableResource: &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: memory}, "vcore": {Value: 1000}, "pods": {Value: 110}}},
		})
	}
	rm.cacheLock.Unlock()
	before := rm.answerCounts(ids)
	rm.updateNode(req)
	waitFor(rm.t, "an answer for every registered node", func() bool {
		now := rm.answerCounts(ids)
		for i := range ids {
			if now[i] <= before[i] {
				return false
			}
		}
		return true
	})
}

func (rm *shimRM) answerCounts(ids []string) []int {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = len(rm.nodeAnswers[id])
	}
	return out
}

func (rm *shimRM) lastAnswer(id string) string {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	a := rm.nodeAnswers[id]
	if len(a) == 0 {
		return ""
	}
	return a[len(a)-1]
}

// enableNodes sends DRAIN_TO_SCHEDULABLE, entering phase "ready".
func (rm *shimRM) enableNodes(ids ...string) {
	req := &si.NodeRequest{}
	for _, id := range ids {
		req.Nodes = append(req.Nodes, &si.NodeInfo{NodeID: id, Action: si.NodeInfo_DRAIN_TO_SCHEDULABLE,
			Attributes: map[string]string{}})
	}
	rm.updateNodeIn("ready", req)
}

func (rm *shimRM) addApp(appID, queue string, gang *si.Resource) {
	rm.t.Helper()
	rm.addGangApp(appID, queue, gang, 60000)
}

// addGangApp adds an application; with gang set, a gang application whose
// placeholders time out after timeoutMs.
func (rm *shimRM) addGangApp(appID, queue string, gang *si.Resource, timeoutMs int64) {
	rm.t.Helper()
	app := &si.AddApplicationRequest{
		ApplicationID: appID, QueueName: queue, PartitionName: "default",
		Ugi:  &si.UserGroupInformation{User: "alice", Groups: []string{"dev"}},
		Tags: map[string]string{"namespace": "default"},
	}
	if gang != nil {
		app.PlaceholderAsk = gang
		app.ExecutionTimeoutMilliSeconds = timeoutMs
		app.GangSchedulingStyle = "Soft"
	}
	rm.ctxLock.Lock()
	err := rm.s.UpdateApplication(&si.ApplicationRequest{RmID: rm.rmID, New: []*si.AddApplicationRequest{app}})
	rm.ctxLock.Unlock()
	if err != nil {
		rm.t.Fatalf("UpdateApplication: %v", err)
	}
}

func (rm *shimRM) waitApp(appID string) (accepted bool, reason string) {
	rm.t.Helper()
	waitFor(rm.t, "an answer for application "+appID, func() bool {
		rm.mu.Lock()
		defer rm.mu.Unlock()
		_, rejected := rm.rejectedApps[appID]
		return rm.acceptedApps[appID] || rejected
	})
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return rm.acceptedApps[appID], rm.rejectedApps[appID]
}

// podAllocation is the allocation the k8shim sends for a pod.
func podAllocation(p *shimPod) *si.Allocation {
	tags := map[string]string{
		"kubernetes.io/meta/namespace": "default",
		"kubernetes.io/meta/podName":   p.key,
		common.CreationTime:            "1700000000",
	}
	a := &si.Allocation{
		AllocationKey: p.key, ApplicationID: p.app, AllocationTags: tags,
		ResourcePerAlloc: quantity(p.memory), Priority: 0,
		TaskGroupName: p.taskGroup, Placeholder: p.placeholder,
		PreemptionPolicy: &si.PreemptionPolicy{AllowPreemptSelf: true, AllowPreemptOther: true},
	}
	if p.foreign {
		a.ApplicationID = ""
		tags[common.Foreign] = common.AllocTypeDefault
	}
	return a
}

// submit sends pending pods (no node) of the RM's own.
func (rm *shimRM) submit(pods ...*shimPod) {
	rm.submitIn("", pods...)
}

func (rm *shimRM) submitIn(phase string, pods ...*shimPod) {
	req := &si.AllocationRequest{}
	rm.cacheLock.Lock()
	for _, p := range pods {
		rm.pods[p.key] = p
		req.Allocations = append(req.Allocations, podAllocation(p))
	}
	rm.cacheLock.Unlock()
	rm.updateAllocationIn(phase, req)
}

// recover sends pods already bound to a node (the k8shim's start-up, or
// a pod bound outside the core), assumed in the cache at once.
func (rm *shimRM) recoverPods(pods ...*shimPod) {
	req := &si.AllocationRequest{}
	rm.cacheLock.Lock()
	for _, p := range pods {
		rm.pods[p.key] = p
		rm.assumeLocked(p, p.node)
		a := podAllocation(p)
		a.NodeID = p.node
		req.Allocations = append(req.Allocations, a)
	}
	rm.cacheLock.Unlock()
	rm.updateAllocation(req)
}

// foreignPod sends (or re-sends, resized) a pod the RM does not schedule,
// entering phase (unless "").
func (rm *shimRM) foreignPod(phase, key, node string, memory int64) {
	p := &shimPod{key: key, node: node, memory: memory, foreign: true}
	rm.cacheLock.Lock()
	rm.pods[key] = p
	rm.cacheLock.Unlock()
	a := podAllocation(p)
	a.NodeID = node
	rm.updateAllocationIn(phase, &si.AllocationRequest{Allocations: []*si.Allocation{a}})
}

// deletePod is a pod deletion: forgotten in the cache, released by key.
func (rm *shimRM) deletePod(key string, termination si.TerminationType) {
	rm.cacheLock.Lock()
	p := rm.pods[key]
	app := ""
	if p != nil {
		app = p.app
		rm.forgetLocked(p)
		delete(rm.pods, key)
		rm.deleted[key] = true
	}
	rm.cacheLock.Unlock()
	rm.updateAllocation(&si.AllocationRequest{Releases: &si.AllocationReleasesRequest{
		AllocationsToRelease: []*si.AllocationRelease{{
			PartitionName: "default", ApplicationID: app, AllocationKey: key,
			TerminationType: termination, Message: "pod deleted",
		}}}})
}

func (rm *shimRM) assumeLocked(p *shimPod, node string) {
	n := rm.nodes[node]
	if n == nil {
		rm.violate("pod %s placed on unknown node %q", p.key, node)
		return
	}
	if p.node != "" && p.node != node && rm.nodes[p.node] != nil {
		rm.violate("pod %s moved from %s to %s", p.key, p.node, node)
	}
	if rm.maxPods > 0 && len(n.pods) >= rm.maxPods && !n.pods[p.key] {
		rm.violate("node %s got pod %s while it holds %v (stale cache at Predicates?)", node, p.key, keys(n.pods))
	}
	if p.hostPort != 0 {
		if other, taken := n.ports[p.hostPort]; taken && other != p.key {
			rm.violate("node %s got pod %s on host port %d held by %s (stale cache at Predicates?)", node, p.key, p.hostPort, other)
		}
		n.ports[p.hostPort] = p.key
	}
	n.pods[p.key] = true
	p.node = node
}

func (rm *shimRM) forgetLocked(p *shimPod) {
	if n := rm.nodes[p.node]; n != nil {
		delete(n.pods, p.key)
		if p.hostPort != 0 && n.ports[p.hostPort] == p.key {
			delete(n.ports, p.hostPort)
		}
	}
	p.node = ""
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

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
	rm.mu.Lock()
	rm.newAllocs = append(rm.newAllocs, r.New...)
	rm.released = append(rm.released, r.Released...)
	rm.rejected = append(rm.rejected, r.RejectedAllocations...)
	rm.mu.Unlock()
	for _, rel := range r.Released {
		if rel.TerminationType != si.TerminationType_STOPPED_BY_RM {
			// The k8shim deletes the pod and confirms later, from its
			// dispatcher, never inside this callback.
			rm.confirmations.Add(1)
			go func(key string, tt si.TerminationType) {
				defer rm.confirmations.Done()
				rm.deletePod(key, tt)
			}(rel.AllocationKey, rel.TerminationType)
		}
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

// waitFor polls cond until it holds or 20s pass.
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
// SICORE_GO_GOEXIT_GUARD=off runs without the Goexit guard, as an RM's
// binary runs by default.
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

// startShim is the k8shim's start-up: register with the queues, register
// the nodes (CREATE_DRAIN, wait for the answers), recover the running
// pods, enable the nodes.
func startShim(t *testing.T, s *Scheduler, rmID string, maxPods int, memory int64, nodes []string, running ...*shimPod) *shimRM {
	t.Helper()
	rm := newShimRM(t, s, rmID, maxPods)
	if err := rm.register(shimQueues); err != nil {
		t.Fatalf("RegisterResourceManager: %v", err)
	}
	rm.registerNodes(memory, nodes...)
	for _, id := range nodes {
		if a := rm.lastAnswer(id); a != "accepted" {
			t.Fatalf("node %s: %s, want accepted", id, a)
		}
	}
	apps := map[string]bool{}
	for _, p := range running {
		if !apps[p.app] {
			apps[p.app] = true
			rm.addApp(p.app, "root.a", nil)
		}
	}
	for app := range apps {
		if ok, reason := rm.waitApp(app); !ok {
			t.Fatalf("application %s rejected: %s", app, reason)
		}
	}
	if len(running) > 0 {
		rm.recoverPods(running...)
		for _, p := range running {
			waitFor(t, "the echo of running pod "+p.key, func() bool { return rm.newCount(p.key) > 0 })
		}
	}
	rm.enableNodes(nodes...)
	return rm
}

func nodeNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("node-%d", i)
	}
	return out
}

// TestShimStartup: CREATE_DRAIN answers for every node (a duplicate is
// rejected, with a reason); running pods are echoed in new on their nodes;
// nodes take no pod before DRAIN_TO_SCHEDULABLE.
func TestShimStartup(t *testing.T) {
	s := newTestScheduler(t)
	rm := newShimRM(t, s, "shim-startup", 0)
	if err := rm.register(shimQueues); err != nil {
		t.Fatalf("RegisterResourceManager: %v", err)
	}
	nodes := nodeNames(3)
	rm.registerNodes(10000, nodes...)
	for _, id := range nodes {
		if a := rm.lastAnswer(id); a != "accepted" {
			t.Errorf("node %s: %q, want accepted", id, a)
		}
	}
	rm.registerNodes(10000, "node-1") // already there
	if a := rm.lastAnswer("node-1"); !strings.HasPrefix(a, "rejected: ") || len(a) == len("rejected: ") {
		t.Errorf("second CREATE_DRAIN of node-1: %q, want rejected with a reason", a)
	}
	rm.addApp("app-1", "root.a", nil)
	if ok, reason := rm.waitApp("app-1"); !ok {
		t.Fatalf("app-1 rejected: %s", reason)
	}
	running := []*shimPod{{key: "run-0", app: "app-1", memory: 100, node: "node-0"},
		{key: "run-2", app: "app-1", memory: 100, node: "node-2"}}
	rm.recoverPods(running...)
	waitFor(t, "the echo of the running pods", func() bool { return rm.newCount("run-0") > 0 && rm.newCount("run-2") > 0 })
	rm.mu.Lock()
	for _, a := range rm.newAllocs {
		want := map[string]string{"run-0": "node-0", "run-2": "node-2"}[a.AllocationKey]
		if a.NodeID != want || a.ApplicationID != "app-1" {
			t.Errorf("echo %s on %q of %q, want node %q of app-1", a.AllocationKey, a.NodeID, a.ApplicationID, want)
		}
	}
	rm.mu.Unlock()
	// A pending pod while every node is still drained: it must wait for
	// DRAIN_TO_SCHEDULABLE (the callback records the phase it came in).
	for id, n := range stateNodes(t, s, rm.rmID) {
		if n.Schedulable {
			t.Errorf("node %s schedulable before DRAIN_TO_SCHEDULABLE", id)
		}
	}
	rm.submitIn("drained", &shimPod{key: "pending-0", app: "app-1", memory: 100})
	rm.enableNodes(nodes...)
	waitFor(t, "pending-0 placed", func() bool { return rm.nodeOf("pending-0") != "" })
	rm.cacheLock.RLock()
	if ph := rm.pods["pending-0"].phase; ph != "ready" {
		t.Errorf("pending-0 was placed in phase %q, before DRAIN_TO_SCHEDULABLE", ph)
	}
	rm.cacheLock.RUnlock()
	if n := rm.newCount("run-0"); n != 1 {
		t.Errorf("run-0 echoed %d times, want once", n)
	}
	got := stateNodes(t, s, rm.rmID)
	for _, id := range nodes {
		if n, ok := got[id]; !ok || !n.Schedulable {
			t.Errorf("node %s after DRAIN_TO_SCHEDULABLE: %+v (listed %v), want schedulable", id, n, ok)
		}
	}
	rm.checkClean()
}

// TestShimPredicatesSeeAssumedPods: one pod per node and one host port
// per node, answered from the cache the UpdateAllocation callback fills.
// Many pods at once, so a batched pass makes many decisions: each
// Predicates must see the pods assumed before it.
func TestShimPredicatesSeeAssumedPods(t *testing.T) {
	s := newTestScheduler(t)
	nodes := nodeNames(6)
	rm := startShim(t, s, "shim-predicates", 1, 100000, nodes,
		&shimPod{key: "run-0", app: "app-1", memory: 10, node: "node-0", hostPort: 8080})
	var pending []*shimPod
	var pendingKeys []string
	for i := 0; i < 12; i++ {
		p := &shimPod{key: fmt.Sprintf("pod-%02d", i), app: "app-1", memory: 10}
		if i%2 == 0 {
			p.hostPort = 8080
		}
		pending = append(pending, p)
		pendingKeys = append(pendingKeys, p.key)
	}
	rm.submit(pending...)
	// Five free nodes (node-0 runs run-0): exactly five pods fit.
	waitFor(t, "five pods placed", func() bool { return rm.placedCount(pendingKeys...) == 5 })
	rm.mu.Lock()
	calls := rm.predicateCalls
	rm.mu.Unlock()
	if calls < 5 {
		t.Errorf("%d Predicates calls, want at least one per placed pod", calls)
	}
	// A deleted pod is released by key and frees its node for one more.
	rm.deletePod("run-0", si.TerminationType_STOPPED_BY_RM)
	waitFor(t, "run-0 released by the core", func() bool { return rm.releasedKeys(si.TerminationType_STOPPED_BY_RM)["run-0"] })
	waitFor(t, "a sixth pod placed on node-0", func() bool { return rm.placedCount(pendingKeys...) == 6 })
	placed := ""
	for _, k := range pendingKeys {
		if rm.nodeOf(k) == "node-0" {
			placed = k
		}
	}
	if placed == "" {
		t.Errorf("no pod went to node-0 after run-0 was deleted")
	}
	// Deleting a pending pod is a release by key too: it never gets placed.
	for _, k := range pendingKeys {
		if rm.nodeOf(k) == "" {
			rm.deletePod(k, si.TerminationType_STOPPED_BY_RM)
		}
	}
	for _, k := range pendingKeys {
		if n := rm.nodeOf(k); n != "" {
			rm.deletePod(k, si.TerminationType_STOPPED_BY_RM)
		}
	}
	for _, k := range pendingKeys {
		if rm.newCount(k) > 1 {
			t.Errorf("%s reported new %d times", k, rm.newCount(k))
		}
	}
	rm.checkClean()
}

// TestShimGang: placeholders are placed, the real pods replace them by
// key (PLACEHOLDER_REPLACED, confirmed by the RM), and each real pod lands
// where its placeholder was.
func TestShimGang(t *testing.T) {
	s := newTestScheduler(t)
	nodes := nodeNames(2)
	// No pod limit: whether the core asks Predicates for a replacement
	// on the placeholder's node is its own business.
	rm := startShim(t, s, "shim-gang", 0, 100000, nodes)
	rm.addApp("gang-1", "root.a", quantity(200))
	if ok, reason := rm.waitApp("gang-1"); !ok {
		t.Fatalf("gang-1 rejected: %s", reason)
	}
	rm.submit(&shimPod{key: "ph-0", app: "gang-1", memory: 100, taskGroup: "tg", placeholder: true},
		&shimPod{key: "ph-1", app: "gang-1", memory: 100, taskGroup: "tg", placeholder: true})
	waitFor(t, "both placeholders placed", func() bool { return rm.placedCount("ph-0", "ph-1") == 2 })
	phNode := map[string]string{rm.nodeOf("ph-0"): "ph-0", rm.nodeOf("ph-1"): "ph-1"}
	rm.submit(&shimPod{key: "real-0", app: "gang-1", memory: 100, taskGroup: "tg"},
		&shimPod{key: "real-1", app: "gang-1", memory: 100, taskGroup: "tg"})
	waitFor(t, "both real pods placed", func() bool { return rm.placedCount("real-0", "real-1") == 2 })
	replaced := rm.releasedKeys(si.TerminationType_PLACEHOLDER_REPLACED)
	if !replaced["ph-0"] || !replaced["ph-1"] || len(replaced) != 2 {
		t.Errorf("PLACEHOLDER_REPLACED releases %v, want ph-0 and ph-1", keys(replaced))
	}
	rm.confirmations.Wait()
	rm.mu.Lock()
	if len(rm.lateNew) != 0 {
		t.Errorf("replaced placeholders placed again: %v", rm.lateNew)
	}
	rm.mu.Unlock()
	for _, k := range []string{"real-0", "real-1"} {
		if _, ok := phNode[rm.nodeOf(k)]; !ok {
			t.Errorf("%s placed on %s, not on a placeholder's node %v", k, rm.nodeOf(k), keys(phNode))
		}
	}
	rm.checkClean()
}

// TestShimForeignPods: a foreign pod occupies its node, a resize by
// re-sending frees room, a release frees the rest; foreign pods are never
// echoed.
func TestShimForeignPods(t *testing.T) {
	s := newTestScheduler(t)
	rm := startShim(t, s, "shim-foreign", 0, 1000, []string{"node-0"})
	rm.addApp("app-1", "root.a", nil)
	if ok, reason := rm.waitApp("app-1"); !ok {
		t.Fatalf("app-1 rejected: %s", reason)
	}
	rm.foreignPod("occupied", "foreign-0", "node-0", 800)
	waitFor(t, "node-0 occupied", func() bool { return stateNodes(t, s, rm.rmID)["node-0"].Occupied["memory"] == 800 })
	// The foreign pod is applied before this pod is looked at: both go
	// through the same queue, in order.
	rm.submit(&shimPod{key: "pod-a", app: "app-1", memory: 500})
	rm.foreignPod("resized", "foreign-0", "node-0", 300)
	waitFor(t, "pod-a placed", func() bool { return rm.nodeOf("pod-a") != "" })
	if occ := stateNodes(t, s, rm.rmID)["node-0"].Occupied["memory"]; occ != 300 {
		t.Errorf("node-0 occupied memory %d after the resize, want 300", occ)
	}
	rm.submit(&shimPod{key: "pod-b", app: "app-1", memory: 500})
	rm.updateAllocationIn("released", &si.AllocationRequest{Releases: &si.AllocationReleasesRequest{
		AllocationsToRelease: []*si.AllocationRelease{{PartitionName: "default", AllocationKey: "foreign-0",
			TerminationType: si.TerminationType_STOPPED_BY_RM, Message: "pod terminated"}}}})
	waitFor(t, "pod-b placed", func() bool { return rm.nodeOf("pod-b") != "" })
	rm.cacheLock.RLock()
	if ph := rm.pods["pod-a"].phase; ph != "resized" {
		t.Errorf("pod-a placed in phase %q, while the foreign pod still occupied 800 of 1000", ph)
	}
	if ph := rm.pods["pod-b"].phase; ph != "released" {
		t.Errorf("pod-b placed in phase %q, while the foreign pod still occupied 300 of 1000", ph)
	}
	rm.cacheLock.RUnlock()
	rm.checkClean()
}

// TestShimNodeRemoval: DECOMISSION releases the node's pods with
// STOPPED_BY_RM, and pending pods go elsewhere.
func TestShimNodeRemoval(t *testing.T) {
	s := newTestScheduler(t)
	rm := startShim(t, s, "shim-remove", 1, 100000, nodeNames(2),
		&shimPod{key: "run-0", app: "app-1", memory: 10, node: "node-0"})
	rm.updateNode(&si.NodeRequest{Nodes: []*si.NodeInfo{{NodeID: "node-0", Action: si.NodeInfo_DECOMISSION}}})
	waitFor(t, "run-0 released", func() bool { return rm.releasedKeys(si.TerminationType_STOPPED_BY_RM)["run-0"] })
	waitFor(t, "node-0 gone from the state dump", func() bool {
		_, listed := stateNodes(t, s, rm.rmID)["node-0"]
		return !listed
	})
	// The RM's cache still has node-0 (the k8s node object goes later):
	// only the core can keep pods off it now.
	rm.submit(&shimPod{key: "pod-a", app: "app-1", memory: 10})
	waitFor(t, "pod-a placed", func() bool { return rm.nodeOf("pod-a") != "" })
	if n := rm.nodeOf("pod-a"); n != "node-1" {
		t.Errorf("pod-a on %s, want node-1", n)
	}
	rm.checkClean()
}

// TestShimConfiguration: invalid YAML fails registration with the reason;
// in UpdateConfiguration it is an error and the old queues stay; a valid
// update applies synchronously; an unchanged one is a no-op.
func TestShimConfiguration(t *testing.T) {
	s := newTestScheduler(t)
	bad := newShimRM(t, s, "shim-bad", 0)
	err := bad.register("partitions: [unclosed")
	if !isRejected(err) {
		t.Errorf("registration with invalid YAML: %v, want an error matching ErrRejected", err)
	}

	const strict = `
partitions:
  - name: default
    placementrules:
      - name: provided
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
`
	rm := newShimRM(t, s, "shim-config", 0)
	if err := rm.register(strict); err != nil {
		t.Fatalf("RegisterResourceManager: %v", err)
	}
	rm.addApp("app-a", "root.a", nil)
	if ok, reason := rm.waitApp("app-a"); !ok {
		t.Fatalf("app-a in root.a rejected: %s", reason)
	}
	rm.addApp("app-b1", "root.b", nil)
	if ok, _ := rm.waitApp("app-b1"); ok {
		t.Errorf("app-b1 accepted into root.b, which the configuration does not have")
	}
	if err := rm.updateConfiguration("partitions:\n  - name: default\n    queues: {"); !isRejected(err) {
		t.Errorf("UpdateConfiguration with invalid YAML: %v, want an error matching ErrRejected", err)
	}
	rm.addApp("app-a2", "root.a", nil)
	if ok, reason := rm.waitApp("app-a2"); !ok {
		t.Errorf("app-a2 rejected after a refused update (the old queues must stay): %s", reason)
	}
	if err := rm.updateConfiguration(strict); err != nil {
		t.Errorf("UpdateConfiguration with the unchanged config: %v", err)
	}
	withB := strict + "          - name: b\n"
	if err := rm.updateConfiguration(withB); err != nil {
		t.Fatalf("UpdateConfiguration adding root.b: %v", err)
	}
	rm.addApp("app-b2", "root.b", nil)
	if ok, reason := rm.waitApp("app-b2"); !ok {
		t.Errorf("app-b2 rejected from root.b after the update: %s", reason)
	}
	rm.checkClean()
}

func isRejected(err error) bool {
	e, ok := err.(*Error)
	return ok && e.Status == StatusRejected && e.Message != ""
}

// TestShimStop: Stop stops the scheduler; later calls fail with
// ErrStopped, a second Stop is a no-op, and no handle is left.
func TestShimStop(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	rm := startShim(t, s, "shim-stop", 0, 1000, nodeNames(1))
	var sched api.SchedulerAPI = s
	sched.Stop()
	err = s.UpdateAllocation(&si.AllocationRequest{RmID: rm.rmID})
	if e, ok := err.(*Error); !ok || e.Status != StatusStopped {
		t.Errorf("UpdateAllocation after Stop: %v, want ErrStopped", err)
	}
	sched.Stop()
	if n := liveHandles.Load(); n != 0 {
		t.Errorf("%d callback handles left after Stop", n)
	}
	rm.checkClean()
}

// dumpNode is a node of the library's state dump (docs/rest-and-metrics.md).
type dumpNode struct {
	ID          string           `json:"id"`
	Schedulable bool             `json:"schedulable"`
	Occupied    map[string]int64 `json:"occupied"`
	Allocated   map[string]int64 `json:"allocated"`
}

// stateNodes returns the nodes of rmID's partitions in the state dump.
func stateNodes(t testing.TB, s *Scheduler, rmID string) map[string]dumpNode {
	t.Helper()
	b, err := s.StateDump()
	if err != nil {
		t.Fatalf("StateDump: %v", err)
	}
	var dump struct {
		Partitions []struct {
			RmID  string     `json:"rm_id"`
			Nodes []dumpNode `json:"nodes"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(b, &dump); err != nil {
		t.Fatalf("state dump: %v", err)
	}
	out := make(map[string]dumpNode)
	for _, p := range dump.Partitions {
		if p.RmID != rmID {
			continue
		}
		for _, n := range p.Nodes {
			out[n.ID] = n
		}
	}
	return out
}

// TestShimStateDumpPlugin: the RM's api.StateDumpPlugin (the k8shim
// implements it) is part of the library's full state dump (c-abi.md:
// get_state_dump is "included in the full state dump").
func TestShimStateDumpPlugin(t *testing.T) {
	s := newTestScheduler(t)
	rm := startShim(t, s, "shim-dump", 0, 1000, nodeNames(1))
	dump, err := s.StateDump()
	if err != nil {
		t.Fatalf("StateDump: %v", err)
	}
	if !strings.Contains(string(dump), `"shim":"test"`) {
		t.Errorf("the state dump does not include the RM's GetStateDump JSON")
	}
	rm.mu.Lock()
	calls := rm.stateDumps
	rm.mu.Unlock()
	if calls == 0 {
		t.Errorf("GetStateDump was never called for the state dump")
	}
	rm.checkClean()
}

// TestShimEvents: the k8shim publishes REQUEST records (objectID the
// allocation key, referenceID the application) as pod events and reads
// NODE records (ADD on registration, REMOVE/NODE_DECOMISSION on removal).
func TestShimEvents(t *testing.T) {
	s := newTestScheduler(t, WithEventFlushInterval(20*time.Millisecond))
	rm := startShim(t, s, "shim-events", 0, 100, nodeNames(2))
	rm.addApp("app-1", "root.a", nil)
	if ok, reason := rm.waitApp("app-1"); !ok {
		t.Fatalf("app-1 rejected: %s", reason)
	}
	rm.submit(&shimPod{key: "too-big", app: "app-1", memory: 1000}) // fits nowhere
	rm.updateNode(&si.NodeRequest{Nodes: []*si.NodeInfo{{NodeID: "node-1", Action: si.NodeInfo_DECOMISSION}}})
	find := func(match func(*si.EventRecord) bool) bool {
		rm.mu.Lock()
		defer rm.mu.Unlock()
		for _, e := range rm.events {
			if match(e) {
				return true
			}
		}
		return false
	}
	// Each record is looked for on its own, so that every missing one is
	// reported.
	expect := func(what string, match func(*si.EventRecord) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !find(match) {
			if time.Now().After(deadline) {
				rm.mu.Lock()
				first := rm.events[:min(len(rm.events), 8)]
				t.Errorf("no %s among %d records; the first: %v", what, len(rm.events), first)
				rm.mu.Unlock()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for _, id := range []string{"node-0", "node-1"} {
		expect("NODE ADD record for "+id, func(e *si.EventRecord) bool {
			return e.Type == si.EventRecord_NODE && e.ObjectID == id &&
				e.EventChangeType == si.EventRecord_ADD && e.EventChangeDetail == si.EventRecord_DETAILS_NONE
		})
	}
	expect("NODE REMOVE/NODE_DECOMISSION record for node-1", func(e *si.EventRecord) bool {
		return e.Type == si.EventRecord_NODE && e.ObjectID == "node-1" &&
			e.EventChangeType == si.EventRecord_REMOVE && e.EventChangeDetail == si.EventRecord_NODE_DECOMISSION
	})
	expect("REQUEST record for too-big with app-1 as referenceID", func(e *si.EventRecord) bool {
		return e.Type == si.EventRecord_REQUEST && e.ObjectID == "too-big" && e.ReferenceID == "app-1" && e.Message != ""
	})
	rm.checkClean()
}

// resizeIn re-sends a pod's allocation with a new size (the k8shim does
// when a pod is resized), with its node once it has one, entering phase.
func (rm *shimRM) resizeIn(phase, key string, memory int64) {
	rm.cacheLock.Lock()
	p := rm.pods[key]
	p.memory = memory
	a := podAllocation(p)
	a.NodeID = p.node
	rm.cacheLock.Unlock()
	rm.updateAllocationIn(phase, &si.AllocationRequest{Allocations: []*si.Allocation{a}})
}

// TestShimResize: re-sending a placed pod with other resources resizes
// its allocation (node usage follows), and the room it frees or takes
// decides what else fits.
func TestShimResize(t *testing.T) {
	s := newTestScheduler(t)
	rm := startShim(t, s, "shim-resize", 0, 1000, []string{"node-0"})
	rm.addApp("app-1", "root.a", nil)
	if ok, reason := rm.waitApp("app-1"); !ok {
		t.Fatalf("app-1 rejected: %s", reason)
	}
	rm.submit(&shimPod{key: "pod-a", app: "app-1", memory: 100})
	waitFor(t, "pod-a placed", func() bool { return rm.nodeOf("pod-a") != "" })
	rm.resizeIn("big", "pod-a", 600)
	waitFor(t, "node-0 allocated memory 600", func() bool {
		return stateNodes(t, s, rm.rmID)["node-0"].Allocated["memory"] == 600
	})
	rm.submit(&shimPod{key: "pod-b", app: "app-1", memory: 500})
	rm.resizeIn("small", "pod-a", 300)
	waitFor(t, "pod-b placed", func() bool { return rm.nodeOf("pod-b") != "" })
	rm.cacheLock.RLock()
	if ph := rm.pods["pod-b"].phase; ph != "small" {
		t.Errorf("pod-b placed in phase %q, while pod-a still held 600 of 1000", ph)
	}
	rm.cacheLock.RUnlock()
	if got := stateNodes(t, s, rm.rmID)["node-0"].Allocated["memory"]; got != 800 {
		t.Errorf("node-0 allocated memory %d, want 800 (pod-a 300, pod-b 500)", got)
	}
	if n := rm.newCount("pod-a"); n != 1 {
		t.Errorf("pod-a reported new %d times; a resize is not a new allocation", n)
	}
	rm.checkClean()
}

// TestShimRejections: a pod of an unknown application and a foreign pod
// without a node are rejected by key (the k8shim fails the task); a pod
// with zero resources too.
func TestShimRejections(t *testing.T) {
	s := newTestScheduler(t)
	rm := startShim(t, s, "shim-reject", 0, 1000, []string{"node-0"})
	rm.cacheLock.Lock()
	rm.pods["orphan"] = &shimPod{key: "orphan", app: "no-such-app", memory: 10}
	rm.pods["nowhere"] = &shimPod{key: "nowhere", memory: 10, foreign: true}
	rm.cacheLock.Unlock()
	orphan := podAllocation(&shimPod{key: "orphan", app: "no-such-app", memory: 10})
	nowhere := podAllocation(&shimPod{key: "nowhere", memory: 10, foreign: true})
	rm.updateAllocation(&si.AllocationRequest{Allocations: []*si.Allocation{orphan, nowhere}})
	waitFor(t, "both rejected", func() bool {
		rm.mu.Lock()
		defer rm.mu.Unlock()
		return len(rm.rejected) >= 2
	})
	rm.mu.Lock()
	got := map[string]*si.RejectedAllocation{}
	for _, r := range rm.rejected {
		got[r.AllocationKey] = r
	}
	rm.mu.Unlock()
	if r := got["orphan"]; r == nil || r.ApplicationID != "no-such-app" || r.Reason == "" {
		t.Errorf("rejection of orphan: %v", r)
	}
	if r := got["nowhere"]; r == nil || r.Reason == "" {
		t.Errorf("rejection of the foreign pod without a node: %v", r)
	}
	rm.checkClean()
}

// TestShimGangTimeout: placeholders whose real pods never come are
// released with TIMEOUT, the placed ones and the pending one alike, and
// the RM confirms each by key.
func TestShimGangTimeout(t *testing.T) {
	s := newTestScheduler(t)
	rm := startShim(t, s, "shim-gang-timeout", 0, 1000, []string{"node-0"})
	rm.addGangApp("gang-1", "root.a", quantity(1200), 300)
	if ok, reason := rm.waitApp("gang-1"); !ok {
		t.Fatalf("gang-1 rejected: %s", reason)
	}
	rm.submit(&shimPod{key: "ph-0", app: "gang-1", memory: 400, taskGroup: "tg", placeholder: true},
		&shimPod{key: "ph-1", app: "gang-1", memory: 400, taskGroup: "tg", placeholder: true},
		&shimPod{key: "ph-2", app: "gang-1", memory: 400, taskGroup: "tg", placeholder: true}) // fits nowhere
	waitFor(t, "two placeholders placed", func() bool { return rm.placedCount("ph-0", "ph-1") == 2 })
	waitFor(t, "TIMEOUT releases of the three placeholders", func() bool {
		r := rm.releasedKeys(si.TerminationType_TIMEOUT)
		return r["ph-0"] && r["ph-1"] && r["ph-2"]
	})
	rm.confirmations.Wait()
	waitFor(t, "node-0 empty after the confirmed timeouts", func() bool {
		return stateNodes(t, s, rm.rmID)["node-0"].Allocated["memory"] == 0
	})
	rm.checkClean()
}
