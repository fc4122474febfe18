// Package scheduler stands in for yunikorn-core's pkg/scheduler as an RM
// reaches it through entrypoint.ServiceContext.Scheduler: the scheduler
// (sicore's, with all its methods), and a ClusterContext to look up
// partitions, applications and nodes, as the k8shim's MockScheduler does
// in its tests.
//
// Every lookup reads the scheduler's state dump at that moment, so a
// ClusterContext or a PartitionContext kept across calls always answers
// with the current state, and the objects it returns are copies of that
// moment (see pkg/scheduler/objects).
package scheduler

import (
	"encoding/json"
	"log/slog"
	"strings"

	"github.com/apache/yunikorn-core/pkg/common/resources"
	"github.com/apache/yunikorn-core/pkg/scheduler/objects"
	"github.com/apache/yunikorn-core/pkg/sicore"
)

// Scheduler is sicore's scheduler, with the reference's GetClusterContext.
type Scheduler struct {
	*sicore.Scheduler
}

// New wraps a sicore scheduler.
func New(s *sicore.Scheduler) *Scheduler {
	return &Scheduler{Scheduler: s}
}

// GetClusterContext returns the view of the scheduler's partitions.
func (s *Scheduler) GetClusterContext() *ClusterContext {
	return &ClusterContext{dump: s.StateDump}
}

// ClusterContext looks up partitions, applications and nodes.
type ClusterContext struct {
	dump func() ([]byte, error)
}

// NewClusterContext returns a context over a state-dump source; the
// scheduler's is Scheduler.GetClusterContext.
func NewClusterContext(dump func() ([]byte, error)) *ClusterContext {
	return &ClusterContext{dump: dump}
}

// GetPartition returns the partition of that name, as "[rmID]name" (the
// reference's full name) or the bare name, or nil when there is none.
func (c *ClusterContext) GetPartition(name string) *PartitionContext {
	if c.find(name) == nil {
		return nil
	}
	return &PartitionContext{Name: name, cluster: c}
}

// GetPartitionMapClone returns every partition by its full name.
func (c *ClusterContext) GetPartitionMapClone() map[string]*PartitionContext {
	out := map[string]*PartitionContext{}
	d := c.read()
	if d == nil {
		return out
	}
	for _, p := range d.Partitions {
		full := "[" + p.RMID + "]" + p.Name
		out[full] = &PartitionContext{Name: full, cluster: c}
	}
	return out
}

// GetApplication returns an active application of the partition, or nil.
func (c *ClusterContext) GetApplication(appID, partitionName string) *objects.Application {
	if p := c.GetPartition(partitionName); p != nil {
		return p.GetApplication(appID)
	}
	return nil
}

// GetNode returns a node of the partition, or nil.
func (c *ClusterContext) GetNode(nodeID, partitionName string) *objects.Node {
	if p := c.GetPartition(partitionName); p != nil {
		return p.GetNode(nodeID)
	}
	return nil
}

// PartitionContext is one partition; each call reads the current state.
type PartitionContext struct {
	// Name is the name it was looked up by.
	Name    string
	cluster *ClusterContext
}

// GetApplications returns the partition's active applications.
func (p *PartitionContext) GetApplications() []*objects.Application {
	d := p.cluster.find(p.Name)
	if d == nil {
		return nil
	}
	out := make([]*objects.Application, 0, len(d.Applications))
	for i := range d.Applications {
		out = append(out, d.application(i))
	}
	return out
}

// GetApplication returns one active application, or nil.
func (p *PartitionContext) GetApplication(appID string) *objects.Application {
	d := p.cluster.find(p.Name)
	if d == nil {
		return nil
	}
	for i := range d.Applications {
		if d.Applications[i].ID == appID {
			return d.application(i)
		}
	}
	return nil
}

// GetNodes returns the partition's nodes.
func (p *PartitionContext) GetNodes() []*objects.Node {
	d := p.cluster.find(p.Name)
	if d == nil {
		return nil
	}
	out := make([]*objects.Node, 0, len(d.Nodes))
	for i := range d.Nodes {
		out = append(out, d.node(i))
	}
	return out
}

// GetNode returns one node, or nil.
func (p *PartitionContext) GetNode(nodeID string) *objects.Node {
	d := p.cluster.find(p.Name)
	if d == nil {
		return nil
	}
	for i := range d.Nodes {
		if d.Nodes[i].ID == nodeID {
			return d.node(i)
		}
	}
	return nil
}

// GetTotalPartitionResource returns the sum of the nodes' capacities.
func (p *PartitionContext) GetTotalPartitionResource() *resources.Resource {
	d := p.cluster.find(p.Name)
	if d == nil {
		return nil
	}
	return res(d.Total)
}

// GetTotalNodeCount returns the number of nodes.
func (p *PartitionContext) GetTotalNodeCount() int { return len(p.GetNodes()) }

// GetTotalApplicationCount returns the number of active applications.
func (p *PartitionContext) GetTotalApplicationCount() int { return len(p.GetApplications()) }

// read takes a state dump; nil (logged) when the scheduler cannot give one.
func (c *ClusterContext) read() *dumpDoc {
	raw, err := c.dump()
	if err != nil {
		slog.Warn("sicore: reading the state dump for the cluster context", "error", err)
		return nil
	}
	var d dumpDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		slog.Warn("sicore: decoding the state dump for the cluster context", "error", err)
		return nil
	}
	return &d
}

// find returns the partition named "[rmID]name" or "name" in a fresh dump.
func (c *ClusterContext) find(name string) *partitionDoc {
	rmID, bare := "", name
	if strings.HasPrefix(name, "[") {
		if end := strings.Index(name, "]"); end > 0 {
			rmID, bare = name[1:end], name[end+1:]
		}
	}
	d := c.read()
	if d == nil {
		return nil
	}
	for i := range d.Partitions {
		p := &d.Partitions[i]
		if p.Name == bare && (rmID == "" || p.RMID == rmID) {
			return p
		}
	}
	return nil
}
