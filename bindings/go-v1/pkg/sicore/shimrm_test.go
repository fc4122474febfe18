package sicore

import (
	"fmt"
	"os"
	"sort"
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
