package sicore

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
)

// benchQueues is the configuration of YuniKorn core's BenchmarkScheduling:
// two leaf queues with guaranteed resources under an open root.
const benchQueues = `
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            resources:
              guaranteed:
                memory: 100000
                vcore: 10000
          - name: b
            resources:
              guaranteed:
                memory: 1000000
                vcore: 10000
`

// Sizes of BenchmarkScheduling (the same flags as bindings/go's, so both
// editions run with one command line):
//
//	go test -tags sicore_checkout -run XXX -bench BenchmarkScheduling -sicore.nodes 500,5000 ./pkg/sicore
var (
	benchNodes       = flag.String("sicore.nodes", "500,1000,2000,5000", "BenchmarkScheduling: comma-separated node counts")
	benchAsks        = flag.Int("sicore.asks", 10000, "BenchmarkScheduling: allocations per run")
	benchGoexitGuard = flag.Bool("sicore.goexit-guard", false,
		"BenchmarkScheduling: run callbacks on goroutines of their own (WithGoexitGuard)")
)

// benchRM counts what it is told and signals when every pod is placed;
// Predicates only counts, so the benchmark measures the scheduler and the
// binding, not the RM.
type benchRM struct {
	mu         sync.Mutex
	nodes      int
	apps       int
	allocated  atomic.Int64
	updates    atomic.Int64
	predicates atomic.Int64
	target     int64
	done       chan struct{}
}

func (r *benchRM) UpdateAllocation(resp *si.AllocationResponse) error {
	r.updates.Add(1)
	if n := r.allocated.Add(int64(len(resp.New))); n >= r.target && n-int64(len(resp.New)) < r.target {
		close(r.done)
	}
	return nil
}

func (r *benchRM) UpdateApplication(resp *si.ApplicationResponse) error {
	r.mu.Lock()
	r.apps += len(resp.Accepted)
	r.mu.Unlock()
	return nil
}

func (r *benchRM) UpdateNode(resp *si.NodeResponse) error {
	r.mu.Lock()
	r.nodes += len(resp.Accepted)
	r.mu.Unlock()
	return nil
}

func (r *benchRM) Predicates(*si.PredicatesArgs) error {
	r.predicates.Add(1)
	return nil
}

func (r *benchRM) PreemptionPredicates(*si.PreemptionPredicatesArgs) *si.PreemptionPredicatesResponse {
	return &si.PreemptionPredicatesResponse{Index: -1}
}
func (r *benchRM) SendEvent([]*si.EventRecord)                                              {}
func (r *benchRM) UpdateContainerSchedulingState(*si.UpdateContainerSchedulingStateRequest) {}

func (r *benchRM) counts() (nodes, apps int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nodes, r.apps
}

// BenchmarkScheduling is bindings/go's BenchmarkScheduling (shape
// single-asks) over the SI v1.x edition: queues root.a and root.b, one
// application in each, 10,000 pending allocations of {memory: 10, vcore:
// 1} split between them, on 500 to 5000 nodes sized {memory: 10*k, vcore:
// k} with k = asks/nodes + 1, registered the k8shim's way (CREATE_DRAIN,
// then DRAIN_TO_SCHEDULABLE). The RM registers a Predicates callback
// unless the name says predicates=off. Each iteration times from
// submitting the pods until the RM has received every allocation; the
// benchmark reports allocations per second, CPU time per allocation,
// Predicates calls per allocation and allocations per UpdateAllocation.
// (v1 has no maxAllocations, so the reference's other shape has no v1
// form.)
func BenchmarkScheduling(b *testing.B) {
	var sizes []int
	for _, f := range strings.Split(*benchNodes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("-sicore.nodes: bad node count %q", f)
		}
		sizes = append(sizes, n)
	}
	asks := *benchAsks
	if asks < 2 {
		b.Fatalf("-sicore.asks: need at least 2, got %d", asks)
	}
	for _, predicates := range []bool{true, false} {
		for _, nodes := range sizes {
			on := map[bool]string{true: "on", false: "off"}[predicates]
			b.Run(fmt.Sprintf("shape=single-asks/predicates=%s/nodes=%d", on, nodes), func(b *testing.B) {
				var elapsed, cpu time.Duration
				var calls, updates int64
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					r := schedulingRound(b, predicates, nodes, asks)
					elapsed += r.took
					cpu += r.cpu
					calls += r.calls
					updates += r.updates
				}
				n := float64(asks) * float64(b.N)
				b.ReportMetric(n/elapsed.Seconds(), "allocs/s")
				b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/alloc")
				b.ReportMetric(float64(calls)/n, "calls/alloc")
				b.ReportMetric(n/float64(updates), "allocs/update")
			})
		}
	}
}

type roundResult struct {
	took, cpu time.Duration
	calls     int64
	updates   int64
}

// processCPU is the user and system time of the process so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func schedulingRound(b *testing.B, predicates bool, nodes, asks int) roundResult {
	opts := []Option{WithoutEvents(), WithLogLevel(slog.LevelWarn),
		WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), WithGoexitGuard(*benchGoexitGuard)}
	if !predicates {
		opts = append(opts, WithoutPredicates())
	}
	s, err := New(opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rm := &benchRM{target: int64(asks), done: make(chan struct{})}
	const rmID = "rm-bench"
	if _, err := s.RegisterResourceManager(&si.RegisterResourceManagerRequest{
		RmID: rmID, PolicyGroup: "queues", Version: "bench", Config: benchQueues}, rm); err != nil {
		b.Fatal(err)
	}
	k := int64(asks/nodes + 1)
	create := &si.NodeRequest{RmID: rmID}
	enable := &si.NodeRequest{RmID: rmID}
	for i := 0; i < nodes; i++ {
		id := fmt.Sprintf("node-%04d", i)
		create.Nodes = append(create.Nodes, &si.NodeInfo{NodeID: id, Action: si.NodeInfo_CREATE_DRAIN,
			Attributes:          map[string]string{"si.io/hostname": id, "si.io/rackname": "/rack-default"},
			SchedulableResource: &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: 10 * k}, "vcore": {Value: k}}}})
		enable.Nodes = append(enable.Nodes, &si.NodeInfo{NodeID: id, Action: si.NodeInfo_DRAIN_TO_SCHEDULABLE})
	}
	if err := s.UpdateNode(create); err != nil {
		b.Fatal(err)
	}
	waitFor(b, "nodes accepted", func() bool { n, _ := rm.counts(); return n == nodes })
	if err := s.UpdateNode(enable); err != nil {
		b.Fatal(err)
	}
	for _, app := range []struct{ id, queue string }{{"app-a", "root.a"}, {"app-b", "root.b"}} {
		if err := s.UpdateApplication(&si.ApplicationRequest{RmID: rmID, New: []*si.AddApplicationRequest{{
			ApplicationID: app.id, QueueName: app.queue, PartitionName: "default",
			Ugi: &si.UserGroupInformation{User: "alice"}}}}); err != nil {
			b.Fatal(err)
		}
	}
	waitFor(b, "applications accepted", func() bool { _, a := rm.counts(); return a == 2 })
	reqs := make([]*si.AllocationRequest, 2)
	for i, app := range []string{"app-a", "app-b"} {
		reqs[i] = &si.AllocationRequest{RmID: rmID}
		n := asks/2 + (1-i)*(asks%2)
		for j := 0; j < n; j++ {
			// The v0.12 benchmark's ask: key, application, resource.
			reqs[i].Allocations = append(reqs[i].Allocations, &si.Allocation{
				AllocationKey: fmt.Sprintf("%s-%d", app, j), ApplicationID: app,
				ResourcePerAlloc: &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: 10}, "vcore": {Value: 1}}}})
		}
	}

	b.StartTimer()
	cpu := processCPU(b)
	start := time.Now()
	for _, req := range reqs {
		if err := s.UpdateAllocation(req); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-rm.done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d pods placed", rm.allocated.Load(), asks)
	}
	took := time.Since(start)
	cpu = processCPU(b) - cpu
	b.StopTimer()
	return roundResult{took: took, cpu: cpu, calls: rm.predicates.Load(), updates: rm.updates.Load()}
}
