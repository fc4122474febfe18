package sicore

/*
#include <stdint.h>
#include "sicore.h"
void sicore_v1go_fill_callbacks(sicore_v1_callbacks *t, uintptr_t handle, int predicates, int state_dump);
uintptr_t sicore_v1go_current_handle(void);
*/
import "C"

import (
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"google.golang.org/protobuf/proto"
)

// The binding implements the upstream scheduler interface.
var _ api.SchedulerAPI = (*Scheduler)(nil)

// Scheduler is a running sicore scheduler core. It implements
// api.SchedulerAPI of the SI v1.8 module, so a resource manager written
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

// Version returns the version of the linked sicore library.
func Version() string {
	return C.GoString(C.sicore_version())
}

// enter marks the start of a call into the library; it fails once Close
// has begun, so the library pointer is never used after it is freed.
func (s *Scheduler) enter(op string) (*C.sicore_scheduler, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, newError(op, StatusStopped, "the scheduler is closed")
	}
	s.inflight++
	return s.ptr, nil
}

// leave marks the end of a call started with enter.
func (s *Scheduler) leave() {
	s.mu.Lock()
	s.inflight--
	if s.inflight == 0 {
		s.idle.Broadcast()
	}
	s.mu.Unlock()
}

func (s *Scheduler) remember(r *registration) {
	s.mu.Lock()
	s.regs[r] = struct{}{}
	s.mu.Unlock()
}

func (s *Scheduler) forget(r *registration) {
	s.mu.Lock()
	delete(s.regs, r)
	s.mu.Unlock()
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

// StateDump returns the scheduler's state as JSON: partitions with their
// queue tree, applications and nodes (field names are documented in the
// project's docs/rest-and-metrics.md, "State dump").
func (s *Scheduler) StateDump() ([]byte, error) {
	const op = "StateDump"
	if err := refuseInCallback(op); err != nil {
		return nil, err
	}
	p, err := s.enter(op)
	if err != nil {
		return nil, err
	}
	defer s.leave()
	var jsonBuf, errBuf C.sicore_buffer
	st := C.sicore_state_dump(p, &jsonBuf, &errBuf)
	if st != C.SICORE_OK {
		return nil, takeError(op, st, &errBuf)
	}
	return takeBuffer(&jsonBuf), nil
}

// Metrics returns the Prometheus text exposition of the yunikorn_*
// metrics (Prometheus text format 0.0.4), for an RM that
// serves /metrics itself. It never waits for the scheduling thread, so it
// may be called from inside a callback.
func (s *Scheduler) Metrics() (string, error) {
	const op = "Metrics"
	p, err := s.enter(op)
	if err != nil {
		return "", err
	}
	defer s.leave()
	var textBuf, errBuf C.sicore_buffer
	st := C.sicore_metrics(p, &textBuf, &errBuf)
	if st != C.SICORE_OK {
		return "", takeError(op, st, &errBuf)
	}
	return string(takeBuffer(&textBuf)), nil
}

// RESTAddress returns the host:port the REST service listens on (useful
// with port 0 in WithRESTAddress), or "" when it was not started.
func (s *Scheduler) RESTAddress() (string, error) {
	const op = "RESTAddress"
	p, err := s.enter(op)
	if err != nil {
		return "", err
	}
	defer s.leave()
	var addrBuf, errBuf C.sicore_buffer
	st := C.sicore_rest_address(p, &addrBuf, &errBuf)
	if st != C.SICORE_OK {
		return "", takeError(op, st, &errBuf)
	}
	return string(takeBuffer(&addrBuf)), nil
}

// inOwnCallback reports whether the caller runs inside one of s's
// callbacks (the trampolines note the running registration per thread).
func (s *Scheduler) inOwnCallback() bool {
	h := handle(C.sicore_v1go_current_handle())
	if h == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for r := range s.regs {
		if r.handle == h {
			return true
		}
	}
	return false
}

// inAnyCallback reports whether the caller runs inside a callback of any
// Scheduler of this process, or inside the library's log handler.
func inAnyCallback() bool {
	return C.sicore_v1go_current_handle() != 0
}

// refuseInCallback refuses a call that waits for the library's threads
// when it comes from inside a callback. The library refuses such calls
// from its own threads; a guarded callback runs on a goroutine of its own
// thread (see WithGoexitGuard), where only the binding can tell.
func refuseInCallback(op string) error {
	if inAnyCallback() {
		return newError(op, StatusWouldDeadlock,
			op+" cannot be called from inside a callback or log handler: it waits for the scheduler's threads")
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

// Close stops the scheduler: pending work is abandoned, the library's
// threads are joined and every callback registration is released. When
// Close returns nil no callback is running or will run again, and every
// later call returns an error matching ErrStopped. Calls already in
// progress finish first. Closing twice is a no-op.
//
// Close must not be called from inside a callback, of this scheduler or
// of any other (stopping a scheduler joins its threads, and the thread
// running the callback may be one of them, or be waited for by one): it
// then returns an error matching ErrWouldDeadlock, stops and frees
// nothing, and the scheduler keeps running, so a later Close from another
// goroutine stops it. The same holds when the library refuses to stop it
// (for instance from a log handler running on a library thread): the
// library's reason is returned.
func (s *Scheduler) Close() error {
	const op = "Close"
	if s.inOwnCallback() {
		return newError(op, StatusWouldDeadlock,
			"Close cannot be called from inside a callback of the same scheduler; it keeps running")
	}
	if inAnyCallback() {
		return newError(op, StatusWouldDeadlock,
			"Close cannot be called from inside a callback of another scheduler (or a log handler); it keeps running")
	}
	// One Close at a time: a second waits for the first's outcome, and
	// tries again itself if the first was refused.
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	s.mu.Lock()
	if s.ptr == nil {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	for s.inflight > 0 {
		s.idle.Wait()
	}
	p := s.ptr
	s.mu.Unlock()

	// sicore_shutdown reports a refusal, which sicore_free could only log;
	// once it succeeded, sicore_free just releases the memory.
	var errBuf C.sicore_buffer
	if st := C.sicore_shutdown(p, &errBuf); st != C.SICORE_OK {
		err := takeError(op, st, &errBuf)
		s.mu.Lock()
		s.closing = false
		s.mu.Unlock()
		return err
	}
	s.mu.Lock()
	s.ptr = nil
	s.mu.Unlock()
	C.sicore_free(p)

	// The library owns every table it was given and has called release
	// for each by now. Anything left is a library bug; free it anyway so
	// no handle outlives the scheduler (tests check this never happens).
	s.mu.Lock()
	left := make([]*registration, 0, len(s.regs))
	for r := range s.regs {
		left = append(left, r)
	}
	s.mu.Unlock()
	for _, r := range left {
		unreleased.Add(1)
		r.free()
	}
	return nil
}

// bytePtr returns a pointer to b's bytes for a borrowed C argument. An
// empty slice maps to a valid, non-NULL pointer with length 0: the library
// refuses NULL message buffers.
func bytePtr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return (*C.uint8_t)(unsafe.Pointer(&emptyBytes[0]))
	}
	return (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(b)))
}

var emptyBytes [1]byte

// takeBuffer copies a library-owned buffer into Go memory and frees it.
func takeBuffer(buf *C.sicore_buffer) []byte {
	if buf.data == nil {
		return nil
	}
	b := C.GoBytes(unsafe.Pointer(buf.data), C.int(buf.len))
	C.sicore_buffer_free(*buf)
	buf.data, buf.len = nil, 0
	return b
}

// takeError turns a failed status and its message buffer into an *Error.
func takeError(op string, st C.enum_sicore_status, buf *C.sicore_buffer) error {
	return newError(op, Status(st), string(takeBuffer(buf)))
}

func marshal(op string, m proto.Message) ([]byte, error) {
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, newError(op, StatusInvalidArgument, "cannot encode the request: "+err.Error())
	}
	return b, nil
}
