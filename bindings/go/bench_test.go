package sicore

import (
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
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

// benchRM counts new allocations and signals when the target is reached;
// everything else is a no-op, so the benchmark measures the scheduler and
// the binding, not the RM.
type benchRM struct {
	fakeRM
	allocated atomic.Int64
	target    int64
	done      chan struct{}
}

func (r *benchRM) UpdateAllocation(resp *si.AllocationResponse) error {
	if n := r.allocated.Add(int64(len(resp.New))); n >= r.target && n-int64(len(resp.New)) < r.target {
		close(r.done)
	}
	return nil
}

func (r *benchRM) Predicates(*si.PredicatesArgs) error { return nil }

// BenchmarkScheduling reproduces YuniKorn core's BenchmarkScheduling
// through the Go binding: queues root.a and root.b, one application in
// each, 10,000 asks of {memory: 10, vcore: 1} split between them, on 500
// to 5000 nodes sized {memory: 10*k, vcore: k} with k = asks/nodes + 1.
// Each iteration times from submitting the asks until the RM has received
// every allocation, and the benchmark reports allocations per second.
//
//	cd bindings/go && go test -run XXX -bench BenchmarkScheduling -benchtime 3x
func BenchmarkScheduling(b *testing.B) {
	const asks = 10000
	for _, nodes := range []int{500, 1000, 2000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				elapsed += schedulingRound(b, nodes, asks)
			}
			b.ReportMetric(float64(asks)*float64(b.N)/elapsed.Seconds(), "allocs/s")
		})
	}
}

// schedulingRound sets up a scheduler with the nodes and applications,
// then submits the asks and returns how long they took to be allocated.
func schedulingRound(b *testing.B, nodes, asks int) time.Duration {
	// Keep the library quiet: no events, info-level logs go nowhere.
	s, err := New(WithPolicyConfig("queues", benchQueues), WithoutEvents(),
		WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rm := &benchRM{fakeRM: *newFakeRM(), target: int64(asks), done: make(chan struct{})}
	const rmID = "rm-bench"
	if _, err := s.RegisterResourceManager(&si.RegisterResourceManagerRequest{
		RmID: rmID, PolicyGroup: "queues", Version: "bench"}, rm); err != nil {
		b.Fatal(err)
	}
	k := int64(asks/nodes + 1)
	ids := make([]string, nodes)
	for i := range ids {
		ids[i] = fmt.Sprintf("node-%04d", i)
	}
	if err := s.UpdateNode(nodeRequest(rmID, 10*k, k, ids...)); err != nil {
		b.Fatal(err)
	}
	waitFor(b, "nodes accepted", func() (ok bool) {
		rm.read(func() { ok = len(rm.acceptedNodes) == nodes })
		return ok
	})
	for _, app := range []struct{ id, queue string }{{"app-a", "root.a"}, {"app-b", "root.b"}} {
		if err := s.UpdateApplication(appRequest(rmID, app.id, app.queue)); err != nil {
			b.Fatal(err)
		}
	}
	waitFor(b, "applications accepted", func() (ok bool) {
		rm.read(func() { ok = rm.acceptedApps["app-a"] && rm.acceptedApps["app-b"] })
		return ok
	})
	reqs := make([]*si.AllocationRequest, 2)
	for i, app := range []string{"app-a", "app-b"} {
		reqs[i] = &si.AllocationRequest{RmID: rmID}
		for j := 0; j < asks/2; j++ {
			reqs[i].Asks = append(reqs[i].Asks, ask(app, fmt.Sprintf("%s-%d", app, j), 10, 1))
		}
	}

	b.StartTimer()
	start := time.Now()
	for _, req := range reqs {
		if err := s.UpdateAllocation(req); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-rm.done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d asks allocated", rm.allocated.Load(), asks)
	}
	took := time.Since(start)
	b.StopTimer()
	return took
}
