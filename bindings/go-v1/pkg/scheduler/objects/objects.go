// Package objects stands in for yunikorn-core's pkg/scheduler/objects as
// an RM's tests use it: applications, nodes and allocations as the
// scheduler holds them, read through pkg/scheduler's ClusterContext.
//
// The reference hands out its live objects. sicore's state lives in the
// Rust library, so these are copies taken from one state dump when they
// are looked up: a test that polls looks the object up again on each
// round (as the k8shim's MockScheduler does), and sees the state of that
// moment. They are read-only.
package objects

import (
	"github.com/apache/yunikorn-core/pkg/common/resources"
)

// Allocation is a placed allocation or a pending request (an ask), as
// SI v1.x folds both into one message.
type Allocation struct {
	allocationKey string
	applicationID string
	nodeID        string
	resource      *resources.Resource
	priority      int32
	placeholder   bool
	foreign       bool
	allocated     bool
}

// NewAllocationView builds an allocation from what a state dump reads; it
// is for pkg/scheduler, not for RMs.
func NewAllocationView(key, appID, nodeID string, res *resources.Resource, priority int32, placeholder, foreign, allocated bool) *Allocation {
	return &Allocation{
		allocationKey: key,
		applicationID: appID,
		nodeID:        nodeID,
		resource:      res,
		priority:      priority,
		placeholder:   placeholder,
		foreign:       foreign,
		allocated:     allocated,
	}
}

// GetAllocationKey returns the RM's key (the pod UID for the k8shim).
func (a *Allocation) GetAllocationKey() string { return a.allocationKey }

// GetApplicationID returns the application; empty for a foreign allocation.
func (a *Allocation) GetApplicationID() string { return a.applicationID }

// GetNodeID returns the node it is placed on; empty for a request.
func (a *Allocation) GetNodeID() string { return a.nodeID }

// GetAllocatedResource returns what it holds (a request: what it asks).
func (a *Allocation) GetAllocatedResource() *resources.Resource { return a.resource.Clone() }

// GetPriority returns its priority.
func (a *Allocation) GetPriority() int32 { return a.priority }

// IsPlaceholder reports whether it is a gang placeholder.
func (a *Allocation) IsPlaceholder() bool { return a.placeholder }

// IsForeign reports whether the scheduler did not place it (an RM's
// foreign allocation on a node).
func (a *Allocation) IsForeign() bool { return a.foreign }

// IsAllocated reports whether it is placed, as opposed to a request.
func (a *Allocation) IsAllocated() bool { return a.allocated }

// Application is one application of a partition.
type Application struct {
	ApplicationID  string
	Partition      string
	SubmissionTime int64

	queuePath   string
	state       string
	user        string
	groups      []string
	allocated   *resources.Resource
	pending     *resources.Resource
	requests    []*Allocation
	allocations []*Allocation
}

// ApplicationView holds what a state dump says of an application; it is
// for pkg/scheduler, not for RMs.
type ApplicationView struct {
	ID, Partition, QueuePath, State, User string
	Groups                                []string
	Allocated, Pending                    *resources.Resource
	Requests, Allocations                 []*Allocation
}

// NewApplicationView builds an application from a view.
func NewApplicationView(v ApplicationView) *Application {
	return &Application{
		ApplicationID: v.ID,
		Partition:     v.Partition,
		queuePath:     v.QueuePath,
		state:         v.State,
		user:          v.User,
		groups:        v.Groups,
		allocated:     v.Allocated,
		pending:       v.Pending,
		requests:      v.Requests,
		allocations:   v.Allocations,
	}
}

// CurrentState returns the state's name ("New", "Accepted", "Running", ...).
func (a *Application) CurrentState() string { return a.state }

// GetQueuePath returns the full path of its queue.
func (a *Application) GetQueuePath() string { return a.queuePath }

// GetUser returns the submitting user.
func (a *Application) GetUser() string { return a.user }

// GetGroups returns the user's groups as the RM sent them.
func (a *Application) GetGroups() []string { return append([]string(nil), a.groups...) }

// GetAllocatedResource returns the sum of its allocations.
func (a *Application) GetAllocatedResource() *resources.Resource { return a.allocated.Clone() }

// GetPendingResource returns the sum of its pending requests.
func (a *Application) GetPendingResource() *resources.Resource { return a.pending.Clone() }

// GetAllRequests returns its pending requests.
func (a *Application) GetAllRequests() []*Allocation {
	return append([]*Allocation(nil), a.requests...)
}

// GetAllAllocations returns its placed allocations.
func (a *Application) GetAllAllocations() []*Allocation {
	return append([]*Allocation(nil), a.allocations...)
}

// Node is one node of a partition.
type Node struct {
	NodeID    string
	Partition string

	attributes  map[string]string
	capacity    *resources.Resource
	allocated   *resources.Resource
	occupied    *resources.Resource
	available   *resources.Resource
	schedulable bool
	allocations []*Allocation
	foreign     []*Allocation
}

// NodeView holds what a state dump says of a node; it is for
// pkg/scheduler, not for RMs.
type NodeView struct {
	ID, Partition                            string
	Attributes                               map[string]string
	Capacity, Allocated, Occupied, Available *resources.Resource
	Schedulable                              bool
	Allocations, Foreign                     []*Allocation
}

// NewNodeView builds a node from a view.
func NewNodeView(v NodeView) *Node {
	return &Node{
		NodeID:      v.ID,
		Partition:   v.Partition,
		attributes:  v.Attributes,
		capacity:    v.Capacity,
		allocated:   v.Allocated,
		occupied:    v.Occupied,
		available:   v.Available,
		schedulable: v.Schedulable,
		allocations: v.Allocations,
		foreign:     v.Foreign,
	}
}

// GetAttribute returns one attribute the RM set ("" when unset).
func (n *Node) GetAttribute(key string) string { return n.attributes[key] }

// GetCapacity returns the schedulable capacity.
func (n *Node) GetCapacity() *resources.Resource { return n.capacity.Clone() }

// GetAllocatedResource returns the sum of the scheduler's allocations.
func (n *Node) GetAllocatedResource() *resources.Resource { return n.allocated.Clone() }

// GetOccupiedResource returns what foreign allocations hold.
func (n *Node) GetOccupiedResource() *resources.Resource { return n.occupied.Clone() }

// GetAvailableResource returns capacity less allocated and occupied.
func (n *Node) GetAvailableResource() *resources.Resource { return n.available.Clone() }

// IsSchedulable reports whether new allocations may be placed on it.
func (n *Node) IsSchedulable() bool { return n.schedulable }

// GetAllAllocations returns the scheduler's allocations on it.
func (n *Node) GetAllAllocations() []*Allocation {
	return append([]*Allocation(nil), n.allocations...)
}

// GetYunikornAllocations returns the scheduler's allocations on it.
func (n *Node) GetYunikornAllocations() []*Allocation { return n.GetAllAllocations() }

// GetForeignAllocations returns the RM's foreign allocations on it.
func (n *Node) GetForeignAllocations() []*Allocation {
	return append([]*Allocation(nil), n.foreign...)
}
