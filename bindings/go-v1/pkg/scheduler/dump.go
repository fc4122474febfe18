package scheduler

import (
	"github.com/apache/yunikorn-core/pkg/common/resources"
	"github.com/apache/yunikorn-core/pkg/scheduler/objects"
)

// The parts of sicore's state dump (docs/rest-and-metrics.md, "State
// dump") that the views read.
type dumpDoc struct {
	Partitions []partitionDoc `json:"partitions"`
}

type partitionDoc struct {
	Name         string           `json:"name"`
	RMID         string           `json:"rm_id"`
	Total        map[string]int64 `json:"total"`
	Applications []appDoc         `json:"applications"`
	Nodes        []nodeDoc        `json:"nodes"`
}

type appDoc struct {
	ID          string           `json:"id"`
	Queue       string           `json:"queue"`
	State       string           `json:"state"`
	User        string           `json:"user"`
	Groups      []string         `json:"groups"`
	Allocated   map[string]int64 `json:"allocated"`
	Pending     map[string]int64 `json:"pending"`
	PendingAsks []askDoc         `json:"pending_asks"`
}

type askDoc struct {
	AllocationKey string           `json:"allocation_key"`
	Resource      map[string]int64 `json:"resource"`
	PendingRepeat int32            `json:"pending_repeat"`
	Priority      int32            `json:"priority"`
}

type nodeDoc struct {
	ID          string                      `json:"id"`
	Capacity    map[string]int64            `json:"capacity"`
	Allocated   map[string]int64            `json:"allocated"`
	Occupied    map[string]int64            `json:"occupied"`
	Available   map[string]int64            `json:"available"`
	Schedulable bool                        `json:"schedulable"`
	Attributes  map[string]string           `json:"attributes"`
	Allocations []allocDoc                  `json:"allocations"`
	Foreign     map[string]map[string]int64 `json:"foreign"`
}

type allocDoc struct {
	UUID          string           `json:"uuid"`
	AllocationKey string           `json:"allocation_key"`
	ApplicationID string           `json:"application_id"`
	Resource      map[string]int64 `json:"resource"`
	Placeholder   bool             `json:"placeholder"`
}

func res(m map[string]int64) *resources.Resource {
	r := resources.NewResource()
	for k, v := range m {
		r.Resources[k] = resources.Quantity(v)
	}
	return r
}

func (p *partitionDoc) fullName() string { return "[" + p.RMID + "]" + p.Name }

// application builds application i with its allocations (found on the
// nodes) and its pending requests.
func (p *partitionDoc) application(i int) *objects.Application {
	a := &p.Applications[i]
	var allocs []*objects.Allocation
	for _, n := range p.Nodes {
		for _, al := range n.Allocations {
			if al.ApplicationID == a.ID {
				allocs = append(allocs, objects.NewAllocationView(al.AllocationKey, a.ID, n.ID, res(al.Resource), 0, al.Placeholder, false, true))
			}
		}
	}
	asks := make([]*objects.Allocation, 0, len(a.PendingAsks))
	for _, k := range a.PendingAsks {
		asks = append(asks, objects.NewAllocationView(k.AllocationKey, a.ID, "", res(k.Resource), k.Priority, false, false, false))
	}
	return objects.NewApplicationView(objects.ApplicationView{
		ID:          a.ID,
		Partition:   p.fullName(),
		QueuePath:   a.Queue,
		State:       a.State,
		User:        a.User,
		Groups:      a.Groups,
		Allocated:   res(a.Allocated),
		Pending:     res(a.Pending),
		Requests:    asks,
		Allocations: allocs,
	})
}

// node builds node i with the scheduler's and the foreign allocations.
func (p *partitionDoc) node(i int) *objects.Node {
	n := &p.Nodes[i]
	allocs := make([]*objects.Allocation, 0, len(n.Allocations))
	for _, al := range n.Allocations {
		allocs = append(allocs, objects.NewAllocationView(al.AllocationKey, al.ApplicationID, n.ID, res(al.Resource), 0, al.Placeholder, false, true))
	}
	foreign := make([]*objects.Allocation, 0, len(n.Foreign))
	for key, r := range n.Foreign {
		foreign = append(foreign, objects.NewAllocationView(key, "", n.ID, res(r), 0, false, true, true))
	}
	return objects.NewNodeView(objects.NodeView{
		ID:          n.ID,
		Partition:   p.fullName(),
		Attributes:  n.Attributes,
		Capacity:    res(n.Capacity),
		Allocated:   res(n.Allocated),
		Occupied:    res(n.Occupied),
		Available:   res(n.Available),
		Schedulable: n.Schedulable,
		Allocations: allocs,
		Foreign:     foreign,
	})
}
