package sicore

/*
#include <stdint.h>
#include "sicore.h"
void sicore_v1go_fill_callbacks(sicore_v1_callbacks *t, uintptr_t handle, int predicates, int state_dump);
*/
import "C"

import (
	"log/slog"
	"runtime"
	"sync"
	"testing"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"google.golang.org/protobuf/proto"
)

// The binding implements the upstream scheduler interface.
var _ api.SchedulerAPI = (*Scheduler)(nil)

// Scheduler is a running sicore scheduler core. It implements
// api.SchedulerAPI of the SI v1.x module, so a resource manager written
// against the YuniKorn scheduler interface v1.8 uses it in place of the
// YuniKorn core.
//
// All methods are safe for concurrent use. UpdateAllocation,
// UpdateApplication and UpdateNode only queue their request and may be
// called from inside a callback; RegisterResourceManager,
// UpdateConfiguration, StateDump and Close wait for the core and return
// an error matching ErrWouldDeadlock when called from inside a callback
// (of any Scheduler).
//
// Call Close (or Stop) when done: it stops the library's threads.
type Scheduler struct {
	logger *slog.Logger
	// withoutPredicates leaves the callback table's predicates NULL
	// (WithoutPredicates).
	withoutPredicates bool
	// guarded runs callbacks on goroutines of their own, where
	// runtime.Goexit is survivable (see WithGoexitGuard).
	guarded bool

	// closeMu serialises Close calls.
	closeMu  sync.Mutex
	mu       sync.Mutex
	idle     sync.Cond           // signalled when inflight drops to 0
	ptr      *C.sicore_scheduler // nil once closed
	closing  bool                // set while Close runs and after it succeeded
	inflight int
	regs     map[*registration]struct{}
}

// New starts a scheduler core with the given options. The queue
// configuration of each resource manager travels in its registration
// request (and later in UpdateConfiguration).
func New(opts ...Option) (*Scheduler, error) {
	const op = "New"
	cfg := config{logger: slog.Default()}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, newError(op, StatusInvalidArgument, err.Error())
		}
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	routeLogsByDefault()
	b := cfg.encode()
	var p *C.sicore_scheduler
	var errBuf C.sicore_buffer
	st := C.sicore_new(bytePtr(b), C.size_t(len(b)), &p, &errBuf)
	runtime.KeepAlive(b)
	if st != C.SICORE_OK {
		return nil, takeError(op, st, &errBuf)
	}
	s := &Scheduler{
		logger:            cfg.logger,
		withoutPredicates: cfg.withoutPredicates,
		guarded:           testing.Testing(),
		ptr:               p,
		regs:              make(map[*registration]struct{}),
	}
	if cfg.goexitGuard != nil {
		s.guarded = *cfg.goexitGuard
	}
	s.idle.L = &s.mu
	return s, nil
}

// RegisterResourceManager registers (or re-registers, resetting its state)
// a resource manager and its callbacks through the library's v1 family.
// It waits until the library has applied the request's config (empty:
// the built-in default): invalid YAML returns an error matching
// ErrRejected with the library's reason. The callbacks run on library
// threads, possibly concurrently, so callback must be safe for concurrent
// use. When callback also implements api.StateDumpPlugin, its
// GetStateDump is included in the library's state dump.
func (s *Scheduler) RegisterResourceManager(request *si.RegisterResourceManagerRequest,
	callback api.ResourceManagerCallback) (*si.RegisterResourceManagerResponse, error) {
	const op = "RegisterResourceManager"
	if request == nil {
		return nil, newError(op, StatusInvalidArgument, "request is nil")
	}
	if callback == nil {
		return nil, newError(op, StatusInvalidArgument, "callback is nil")
	}
	b, err := marshal(op, request)
	if err != nil {
		return nil, err
	}
	return s.registerEncoded(b, callback)
}

// registerEncoded registers an encoded si.RegisterResourceManagerRequest.
func (s *Scheduler) registerEncoded(b []byte, callback api.ResourceManagerCallback) (*si.RegisterResourceManagerResponse, error) {
	const op = "RegisterResourceManager"
	if err := refuseInCallback(op); err != nil {
		return nil, err
	}
	p, err := s.enter(op)
	if err != nil {
		return nil, err
	}
	defer s.leave()
	// The library owns the table from here on, whatever the outcome, and
	// calls release exactly once (at once on failure, else on
	// re-registration or Close); until then the registration stays
	// reachable through its handle and s.regs.
	r := newRegistration(s, callback)
	s.remember(r)
	var table C.sicore_v1_callbacks
	predicates := C.int(1)
	if s.withoutPredicates {
		predicates = 0
	}
	stateDump := C.int(0)
	if _, ok := callback.(api.StateDumpPlugin); ok {
		stateDump = 1
	}
	C.sicore_v1go_fill_callbacks(&table, C.uintptr_t(r.handle), predicates, stateDump)
	var respBuf, errBuf C.sicore_buffer
	st := C.sicore_v1_register_resource_manager(p, bytePtr(b), C.size_t(len(b)), &table, &respBuf, &errBuf)
	runtime.KeepAlive(b)
	if st != C.SICORE_OK {
		return nil, takeError(op, st, &errBuf)
	}
	resp := new(si.RegisterResourceManagerResponse)
	if err := proto.Unmarshal(takeBuffer(&respBuf), resp); err != nil {
		return nil, newError(op, StatusDecodeError, "cannot decode the RegisterResourceManagerResponse: "+err.Error())
	}
	return resp, nil
}

// UpdateAllocation queues allocations (requests, placed or foreign
// allocations, resizes; merged by allocationKey) and releases by key. The
// request is checked before it is queued (an unknown rmID fails here);
// its outcome reaches the resource manager through
// ResourceManagerCallback.UpdateAllocation. Safe to call from inside a
// callback.
func (s *Scheduler) UpdateAllocation(request *si.AllocationRequest) error {
	if request == nil {
		return newError(opUpdateAllocation, StatusInvalidArgument, "request is nil")
	}
	// The per-pod request: encoded without reflection into a recycled
	// buffer (encode.go).
	buf := requestBuffers.Get().(*[]byte)
	b, err := encodeAllocationRequest(*buf, request)
	if err != nil {
		requestBuffers.Put(buf)
		return newError(opUpdateAllocation, StatusInvalidArgument, "cannot encode the request: "+err.Error())
	}
	err = s.queueEncoded(opUpdateAllocation, b)
	if cap(b) <= maxPooledRequest {
		*buf = b
		requestBuffers.Put(buf)
	}
	return err
}

// UpdateApplication queues applications to add and remove; the outcome
// reaches ResourceManagerCallback.UpdateApplication. Checked and queued
// like UpdateAllocation.
func (s *Scheduler) UpdateApplication(request *si.ApplicationRequest) error {
	if request == nil {
		return newError(opUpdateApplication, StatusInvalidArgument, "request is nil")
	}
	return s.queue(opUpdateApplication, request)
}

// UpdateNode queues nodes to create, update, drain or remove; the outcome
// reaches ResourceManagerCallback.UpdateNode. Checked and queued like
// UpdateAllocation.
func (s *Scheduler) UpdateNode(request *si.NodeRequest) error {
	if request == nil {
		return newError(opUpdateNode, StatusInvalidArgument, "request is nil")
	}
	return s.queue(opUpdateNode, request)
}

const (
	opUpdateAllocation  = "UpdateAllocation"
	opUpdateApplication = "UpdateApplication"
	opUpdateNode        = "UpdateNode"
)

func (s *Scheduler) queue(op string, request proto.Message) error {
	b, err := marshal(op, request)
	if err != nil {
		return err
	}
	return s.queueEncoded(op, b)
}

// queueEncoded hands an encoded request to the library's asynchronous
// entry point for op.
func (s *Scheduler) queueEncoded(op string, b []byte) error {
	p, err := s.enter(op)
	if err != nil {
		return err
	}
	defer s.leave()
	var errBuf C.sicore_buffer
	var st C.enum_sicore_status
	switch op {
	case opUpdateAllocation:
		st = C.sicore_v1_update_allocation(p, bytePtr(b), C.size_t(len(b)), &errBuf)
	case opUpdateApplication:
		st = C.sicore_v1_update_application(p, bytePtr(b), C.size_t(len(b)), &errBuf)
	case opUpdateNode:
		st = C.sicore_v1_update_node(p, bytePtr(b), C.size_t(len(b)), &errBuf)
	default:
		return newError(op, StatusInvalidArgument, "unknown operation")
	}
	runtime.KeepAlive(b)
	if st != C.SICORE_OK {
		return takeError(op, st, &errBuf)
	}
	return nil
}

// UpdateConfiguration applies the configuration carried by request (its
// extraConfig first, then the config YAML) to the resource manager
// request.RmID. It waits for the outcome: invalid YAML returns an error
// matching ErrRejected and the old queues stay; an unchanged config is a
// no-op.
func (s *Scheduler) UpdateConfiguration(request *si.UpdateConfigurationRequest) error {
	const op = "UpdateConfiguration"
	if request == nil {
		return newError(op, StatusInvalidArgument, "request is nil")
	}
	if err := refuseInCallback(op); err != nil {
		return err
	}
	b, err := marshal(op, request)
	if err != nil {
		return err
	}
	p, err := s.enter(op)
	if err != nil {
		return err
	}
	defer s.leave()
	var errBuf C.sicore_buffer
	st := C.sicore_v1_update_configuration(p, bytePtr(b), C.size_t(len(b)), &errBuf)
	runtime.KeepAlive(b)
	if st != C.SICORE_OK {
		return takeError(op, st, &errBuf)
	}
	return nil
}

// Stop is api.SchedulerAPI's Stop: Close, with a failure logged since
// Stop cannot return it (the scheduler then keeps running; see Close).
func (s *Scheduler) Stop() {
	if err := s.Close(); err != nil {
		s.logger.Error("sicore: Stop failed", "error", err)
	}
}

func marshal(op string, m proto.Message) ([]byte, error) {
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, newError(op, StatusInvalidArgument, "cannot encode the request: "+err.Error())
	}
	return b, nil
}
