package sicore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
)

// TestConcurrentUpdateAllocation has many goroutines submit asks at once
// while the callbacks deliver the allocations.
func TestConcurrentUpdateAllocation(t *testing.T) {
	s := newTestScheduler(t)
	rm := newFakeRM()
	const rmID = "rm-conc"
	setUp(t, s, rmID, rm, "app-1", "root.a", "node-1", "node-2", "node-3", "node-4")

	const goroutines, perGoroutine = 16, 40
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*perGoroutine)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < perGoroutine; i++ {
				err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{
					ask("app-1", fmt.Sprintf("ask-%d-%d", g, i), 10, 1),
				}})
				if err != nil {
					errs <- err
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("UpdateAllocation: %v", err)
	}
	waitFor(t, "every ask allocated", func() bool { return rm.allocationCount() == goroutines*perGoroutine })
}

// TestReentrantUpdateAllocation has a callback submit the next ask from
// inside UpdateAllocation, and checks that synchronous calls from inside
// a callback fail with ErrWouldDeadlock instead of hanging.
func TestReentrantUpdateAllocation(t *testing.T) {
	s := newTestScheduler(t)
	rm := newFakeRM()
	const rmID = "rm-reentrant"
	const chain = 25
	var syncErrs []error
	var once sync.Once
	rm.onAllocation = func(r *si.AllocationResponse) error {
		once.Do(func() {
			_, err := s.RegisterResourceManager(&si.RegisterResourceManagerRequest{RmID: rmID, PolicyGroup: "queues"}, rm)
			_, err2 := s.StateDump()
			syncErrs = append(syncErrs, err, s.UpdateConfiguration(rmID), err2, s.Close())
		})
		for _, a := range r.New {
			var n int
			if _, err := fmt.Sscanf(a.AllocationKey, "chain-%d", &n); err != nil || n+1 >= chain {
				continue
			}
			err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{
				ask("app-1", fmt.Sprintf("chain-%d", n+1), 10, 1),
			}})
			if err != nil {
				return fmt.Errorf("re-entrant UpdateAllocation: %w", err)
			}
		}
		return nil
	}
	setUp(t, s, rmID, rm, "app-1", "root.a", "node-1")
	if err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{ask("app-1", "chain-0", 10, 1)}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the whole chain allocated", func() bool { return rm.allocationCount() == chain })
	if len(syncErrs) != 4 {
		t.Fatalf("got %d results of synchronous calls, want 4", len(syncErrs))
	}
	for i, err := range syncErrs {
		if !errors.Is(err, ErrWouldDeadlock) {
			t.Errorf("synchronous call %d from a callback: got %v, want ErrWouldDeadlock", i, err)
		}
	}
	// The scheduler survived the Close attempt from inside the callback.
	if _, err := s.StateDump(); err != nil {
		t.Errorf("StateDump after the refused Close: %v", err)
	}
}

// TestCloseWithCallbacksInFlight closes the scheduler while callbacks are
// running and calling back into it, then checks that no callback runs
// afterwards and that no handle or goroutine is left behind.
func TestCloseWithCallbacksInFlight(t *testing.T) {
	handlesBefore := liveHandles.Load()
	goroutinesBefore := runtime.NumGoroutine()

	for round := 0; round < 3; round++ {
		s, err := New()
		if err != nil {
			t.Fatal(err)
		}
		rm := newFakeRM()
		const rmID = "rm-close"
		var running, afterClose atomic.Int32
		var closed atomic.Bool
		var badClose atomic.Int32
		started := make(chan struct{})
		var startOnce sync.Once
		rm.onAllocation = func(r *si.AllocationResponse) error {
			running.Add(1)
			defer running.Add(-1)
			if closed.Load() {
				afterClose.Add(1)
			}
			startOnce.Do(func() { close(started) })
			time.Sleep(time.Millisecond)
			// Close from inside a callback is refused, also while another
			// goroutine's Close is waiting for this very callback.
			if err := s.Close(); !errors.Is(err, ErrWouldDeadlock) {
				badClose.Add(1)
			}
			// Keep feeding the scheduler from inside the callback; once
			// Close has begun these calls fail with ErrStopped.
			for _, a := range r.New {
				err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{
					ask("app-1", a.AllocationKey+"+", 10, 1),
				}})
				if err != nil && !errors.Is(err, ErrStopped) && !errors.Is(err, ErrRejected) {
					return err
				}
			}
			return nil
		}
		setUp(t, s, rmID, rm, "app-1", "root.a", "node-1", "node-2")
		req := &si.AllocationRequest{RmID: rmID}
		for i := 0; i < 200; i++ {
			req.Asks = append(req.Asks, ask("app-1", fmt.Sprintf("ask-%d", i), 10, 1))
		}
		if err := s.UpdateAllocation(req); err != nil {
			t.Fatal(err)
		}
		// Goroutines hammering the API while Close runs.
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{
						ask("app-1", fmt.Sprintf("bg-%d-%d", g, i), 10, 1),
					}})
					if err != nil && !errors.Is(err, ErrStopped) && !errors.Is(err, ErrRejected) {
						t.Errorf("UpdateAllocation during Close: %v", err)
						return
					}
					if _, err := s.StateDump(); err != nil && !errors.Is(err, ErrStopped) {
						t.Errorf("StateDump during Close: %v", err)
						return
					}
				}
			}(g)
		}
		<-started
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		closed.Store(true)
		if n := running.Load(); n != 0 {
			t.Errorf("%d callbacks still running after Close returned", n)
		}
		close(stop)
		wg.Wait()
		time.Sleep(20 * time.Millisecond)
		if n := badClose.Load(); n != 0 {
			t.Errorf("%d Close calls from inside a callback were not refused with ErrWouldDeadlock", n)
		}
		if n := afterClose.Load(); n != 0 {
			t.Errorf("%d callbacks started after Close returned", n)
		}
		if err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID}); !errors.Is(err, ErrStopped) {
			t.Errorf("UpdateAllocation after Close: got %v, want ErrStopped", err)
		}
	}

	if n := liveHandles.Load(); n != handlesBefore {
		t.Errorf("%d callback handles left after Close, want %d", n, handlesBefore)
	}
	waitFor(t, "goroutines back to their number before the test", func() bool {
		return runtime.NumGoroutine() <= goroutinesBefore
	})
}

// TestCloseOfAnotherSchedulerFromACallback closes scheduler B from inside
// a callback of scheduler A (issue 24, defect 3). The library cannot stop
// B there, so Close must say so and leave B running; Close from the test
// goroutine then stops it.
func TestCloseOfAnotherSchedulerFromACallback(t *testing.T) {
	a := newTestScheduler(t)
	b, err := New()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	rmB := newFakeRM()
	setUp(t, b, "rm-b", rmB, "app-b", "root.b", "node-b")

	rmA := newFakeRM()
	closeErr := make(chan error, 1)
	var once sync.Once
	rmA.onNode = func(*si.NodeResponse) error {
		once.Do(func() { closeErr <- b.Close() })
		return nil
	}
	register(t, a, "rm-a", rmA)
	if err := a.UpdateNode(nodeRequest("rm-a", 1000, 10, "node-a")); err != nil {
		t.Fatal(err)
	}
	var got error
	select {
	case got = <-closeErr:
	case <-time.After(20 * time.Second):
		t.Fatal("A's node callback did not run")
	}
	if !errors.Is(got, ErrWouldDeadlock) {
		t.Fatalf("Close of B from A's callback: got %v, want ErrWouldDeadlock", got)
	}
	// B still works: nothing was stopped or freed.
	if err := b.UpdateAllocation(&si.AllocationRequest{RmID: "rm-b", Asks: []*si.AllocationAsk{
		ask("app-b", "after-refused-close", 10, 1),
	}}); err != nil {
		t.Fatalf("UpdateAllocation on B after the refused Close: %v", err)
	}
	waitFor(t, "B allocates after the refused Close", func() bool { return rmB.allocationCount() == 1 })
	if _, err := b.StateDump(); err != nil {
		t.Fatalf("StateDump of B after the refused Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close of B from the test goroutine: %v", err)
	}
	if err := b.UpdateAllocation(&si.AllocationRequest{RmID: "rm-b"}); !errors.Is(err, ErrStopped) {
		t.Errorf("UpdateAllocation after Close: got %v, want ErrStopped", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// closingHandler is a slog.Handler that closes a scheduler on the first
// record that mentions match.
type closingHandler struct {
	target *Scheduler
	match  string
	once   sync.Once
	result chan error
}

func (h *closingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *closingHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.match) {
		h.once.Do(func() { h.result <- h.target.Close() })
	}
	return nil
}
func (h *closingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *closingHandler) WithGroup(string) slog.Handler      { return h }

// TestCloseFromTheLogHandler closes a scheduler from the library's log
// handler, which runs on a library thread (here A's core thread, logging
// a registration): refused like a Close from a callback, and the
// scheduler keeps running.
func TestCloseFromTheLogHandler(t *testing.T) {
	b, err := New()
	if err != nil {
		t.Fatal(err)
	}
	h := &closingHandler{target: b, match: "rm-log-a registered", result: make(chan error, 1)}
	SetLogger(slog.New(h), slog.LevelInfo)
	defer SetLogger(nil, slog.LevelInfo)
	// The registration record is at info, whatever level earlier tests left.
	a := newTestScheduler(t, WithLogLevel(slog.LevelInfo))
	register(t, a, "rm-log-a", newFakeRM())
	var got error
	select {
	case got = <-h.result:
	case <-time.After(20 * time.Second):
		t.Fatal("no registration record reached the handler")
	}
	if !errors.Is(got, ErrWouldDeadlock) {
		t.Fatalf("Close from the log handler: got %v, want ErrWouldDeadlock", got)
	}
	if _, err := b.StateDump(); err != nil {
		t.Fatalf("StateDump after the refused Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close from the test goroutine: %v", err)
	}
}
