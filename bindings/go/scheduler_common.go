// The edition-neutral half of Scheduler: the type, New, and the paths of
// registration and of the queued requests. The SI methods themselves,
// whose signatures name the edition's si messages, and the C entry points
// they reach (registerEntry, queueEntry) are in the edition's
// scheduler.go.

package sicore

/*
#include "sicore.h"
*/
import "C"

import (
	"log/slog"
	"runtime"
	"sync"
	"testing"
)

// Scheduler is a running sicore scheduler core. It implements the
// api.SchedulerAPI of this edition's SI module (see the package
// documentation), so a resource manager written against the YuniKorn
// scheduler interface uses it in place of the YuniKorn core.
//
// All methods are safe for concurrent use. UpdateAllocation,
// UpdateApplication and UpdateNode only queue their request and may be
// called from inside a callback; RegisterResourceManager,
// UpdateConfiguration, StateDump, Close and the edition's other waiting
// methods (SetPolicyConfig in SI v0.12, Stop in v1.x) wait for the core
// and return an error matching ErrWouldDeadlock when called from inside a
// callback (of any Scheduler).
//
// Call Close when done: it stops the library's threads.
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

// New starts a scheduler core with the given options. Where the queue
// configuration comes from is the edition's: see the package
// documentation and RegisterResourceManager.
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

// registerEncoded registers an encoded si.RegisterResourceManagerRequest.
func (s *Scheduler) registerEncoded(b []byte, callback rmCallback) (*siRegisterResourceManagerResponse, error) {
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
	var respBuf, errBuf C.sicore_buffer
	st := registerEntry(p, b, r, !s.withoutPredicates, &respBuf, &errBuf)
	runtime.KeepAlive(b)
	if st != C.SICORE_OK {
		return nil, takeError(op, st, &errBuf)
	}
	resp, err := unmarshal[siRegisterResourceManagerResponse](takeBuffer(&respBuf))
	if err != nil {
		return nil, newError(op, StatusDecodeError, "cannot decode the RegisterResourceManagerResponse: "+err.Error())
	}
	return resp, nil
}

// updateAllocation checks and queues an si.AllocationRequest, the per-pod
// request: encoded without reflection into a recycled buffer (the
// edition's encode.go).
func (s *Scheduler) updateAllocation(request *siAllocationRequest) error {
	if request == nil {
		return newError(opUpdateAllocation, StatusInvalidArgument, "request is nil")
	}
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

const (
	opUpdateAllocation  = "UpdateAllocation"
	opUpdateApplication = "UpdateApplication"
	opUpdateNode        = "UpdateNode"
)

func (s *Scheduler) queue(op string, request protoMessage) error {
	b, err := marshal(op, request)
	if err != nil {
		return err
	}
	return s.queueEncoded(op, b)
}

// queueEncoded hands an encoded request to the library's asynchronous
// entry point for op (queueEntry).
func (s *Scheduler) queueEncoded(op string, b []byte) error {
	p, err := s.enter(op)
	if err != nil {
		return err
	}
	defer s.leave()
	var errBuf C.sicore_buffer
	st, known := queueEntry(op, p, b, &errBuf)
	if !known {
		return newError(op, StatusInvalidArgument, "unknown operation")
	}
	runtime.KeepAlive(b)
	if st != C.SICORE_OK {
		return takeError(op, st, &errBuf)
	}
	return nil
}

func marshal(op string, m protoMessage) ([]byte, error) {
	b, err := protoMarshal(m)
	if err != nil {
		return nil, newError(op, StatusInvalidArgument, "cannot encode the request: "+err.Error())
	}
	return b, nil
}

// cBool is v as a C int flag.
func cBool(v bool) C.int {
	if v {
		return 1
	}
	return 0
}
