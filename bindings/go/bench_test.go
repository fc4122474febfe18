package sicore

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
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

// Sizes of BenchmarkScheduling, changeable for profiling runs (for
// instance two ask counts, whose difference gives the cost per
// allocation without the set-up):
//
//	go test -tags sicore_checkout -run XXX -bench BenchmarkScheduling -sicore.nodes 500 -sicore.asks 20000
var (
	benchNodes = flag.String("sicore.nodes", "500,1000,2000,5000", "BenchmarkScheduling: comma-separated node counts")
	benchAsks  = flag.Int("sicore.asks", 10000, "BenchmarkScheduling: allocations per run")
	// Under valgrind a run lasts many seconds, and the outstanding-request
	// check (every second by default) would report every waiting ask,
	// which a run at full speed never sees; a callgrind run sets it long.
	// Off by default: what a resource manager's binary runs (the guard is
	// on by default only in test binaries such as this one).
	benchGoexitGuard = flag.Bool("sicore.goexit-guard", false,
		"BenchmarkScheduling: run callbacks on goroutines of their own (WithGoexitGuard)")
	benchOutstanding = flag.Duration("sicore.outstanding-check", 0,
		"BenchmarkScheduling: outstanding-request check interval (0: the library default)")
)

// benchRM counts new allocations and signals when the target is reached.
// Predicates and ReSyncSchedulerCache only count their calls, so the
// benchmark measures the scheduler and the binding, not the RM.
type benchRM struct {
	fakeRM
	allocated  atomic.Int64
	updates    atomic.Int64
	predicates atomic.Int64
	resyncs    atomic.Int64
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

func (r *benchRM) Predicates(*si.PredicatesArgs) error {
	r.predicates.Add(1)
	return nil
}

func (r *benchRM) ReSyncSchedulerCache(*si.ReSyncSchedulerCacheArgs) error {
	r.resyncs.Add(1)
	return nil
}

// benchShape is how the asks of a run are submitted.
type benchShape int

const (
	// singleAsks: every allocation is its own ask (maxAllocations 1),
	// half of them in each application, in one request per application.
	singleAsks benchShape = iota
	// maxAllocations: YuniKorn core's shape, one ask per application
	// whose maxAllocations is half the allocations.
	maxAllocations
)

func (s benchShape) String() string {
	if s == maxAllocations {
		return "max-allocations"
	}
	return "single-asks"
}

// BenchmarkScheduling reproduces YuniKorn core's BenchmarkScheduling
// through the Go binding: queues root.a and root.b, one application in
// each, 10,000 allocations of {memory: 10, vcore: 1} split between them,
// on 500 to 5000 nodes sized {memory: 10*k, vcore: k} with
// k = asks/nodes + 1. Two request shapes: shape=single-asks submits
// 10,000 asks with maxAllocations 1; shape=max-allocations is the
// reference's, one ask with maxAllocations 5,000 per application. The RM
// registers a Predicates callback, as a Kubernetes shim does, unless the
// name says predicates=off (the WithoutPredicates option). Each iteration
// times from submitting the asks until the RM has received every
// allocation, and the benchmark reports allocations per second, CPU time
// per allocation, the Predicates and ReSync calls per allocation and the
// allocations per UpdateAllocation callback.
//
//	cd bindings/go && go test -tags sicore_checkout -run XXX -bench BenchmarkScheduling -benchtime 3x
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
	for _, shape := range []benchShape{singleAsks, maxAllocations} {
		for _, predicates := range []bool{true, false} {
			for _, nodes := range sizes {
				on := map[bool]string{true: "on", false: "off"}[predicates]
				b.Run(fmt.Sprintf("shape=%s/predicates=%s/nodes=%d", shape, on, nodes), func(b *testing.B) {
					var elapsed, cpu time.Duration
					var calls, updates int64
					for i := 0; i < b.N; i++ {
						b.StopTimer()
						r := schedulingRound(b, shape, predicates, nodes, asks)
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
}

// roundResult is what one round measured: the time from submitting the
// asks to the last allocation, the CPU time the whole process used in it
// (every thread: on a shared machine a steadier measure than the wall
// clock), and the Predicates and ReSyncSchedulerCache calls the RM saw.
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

// schedulingRound sets up a scheduler with the nodes and applications,
// then submits the asks and measures their allocation.
func schedulingRound(b *testing.B, shape benchShape, predicates bool, nodes, asks int) roundResult {
	// Keep the library quiet: no events, info-level logs go nowhere.
	opts := []Option{WithPolicyConfig("queues", benchQueues), WithoutEvents(),
		WithLogLevel(slog.LevelWarn), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
	if !predicates {
		opts = append(opts, WithoutPredicates())
	}
	if *benchOutstanding > 0 {
		opts = append(opts, WithOutstandingCheckInterval(*benchOutstanding))
	}
	opts = append(opts, WithGoexitGuard(*benchGoexitGuard))
	s, err := New(opts...)
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
		// The first application takes the odd one out of an odd count.
		n := asks/2 + (1-i)*(asks%2)
		switch shape {
		case singleAsks:
			for j := 0; j < n; j++ {
				reqs[i].Asks = append(reqs[i].Asks, ask(app, fmt.Sprintf("%s-%d", app, j), 10, 1))
			}
		case maxAllocations:
			// As in the reference, both applications use the same key.
			a := ask(app, "alloc-1", 10, 1)
			a.MaxAllocations = int32(n)
			reqs[i].Asks = append(reqs[i].Asks, a)
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
		b.Fatalf("only %d of %d asks allocated", rm.allocated.Load(), asks)
	}
	took := time.Since(start)
	cpu = processCPU(b) - cpu
	b.StopTimer()
	return roundResult{took: took, cpu: cpu, calls: rm.predicates.Load() + rm.resyncs.Load(),
		updates: rm.updates.Load()}
}
