// Package sicore is the Go binding of sicore, a scheduler core that
// implements the YuniKorn scheduler interface (SI) v0.12 and is shipped as
// a C library (libsicore).
//
// A resource manager written against the upstream Go module
// github.com/apache/incubator-yunikorn-scheduler-interface (package
// lib/go/api for SchedulerAPI and ResourceManagerCallback, lib/go/si for
// the messages) switches its scheduler core by changing one constructor
// call: New returns a *Scheduler, which implements api.SchedulerAPI with
// the upstream si types.
//
//	sched, err := sicore.New(sicore.WithConfigDir("/etc/yunikorn"))
//	if err != nil { ... }
//	defer sched.Close()
//	var api api.SchedulerAPI = sched
//	api.RegisterResourceManager(&si.RegisterResourceManagerRequest{...}, myCallback)
//
// # Calls and callbacks
//
// Every request is encoded with protobuf and handed to the library.
// UpdateAllocation, UpdateApplication and UpdateNode are checked on the
// calling goroutine and queued; their outcome arrives later through the
// resource manager's callbacks. RegisterResourceManager,
// UpdateConfiguration and SetPolicyConfig wait for the core.
//
// Callbacks run on the library's threads, possibly concurrently, so the
// api.ResourceManagerCallback must be safe for concurrent use. A callback
// may call UpdateAllocation, UpdateApplication and UpdateNode; the
// synchronous calls (RegisterResourceManager, UpdateConfiguration,
// SetPolicyConfig, StateDump, Close) return an error matching ErrWouldDeadlock from inside
// a callback of any Scheduler, and a refused Close leaves the scheduler
// running. An error returned by a callback is passed to the library
// with its message; a panic in a callback is recovered, logged (see
// WithLogger) and passed on as an error, so it never unwinds into the
// library. In test binaries runtime.Goexit in a callback (t.FailNow) is
// caught the same way; see WithGoexitGuard.
//
// The library asks Predicates once per node it tries and, before each
// call, hands the RM the allocations decided so far through
// ReSyncSchedulerCache. An RM whose Predicates accepts every node can
// turn the calls off with the WithoutPredicates option; the ReSync then
// comes once per batch of allocations, before their UpdateAllocation.
//
// # Errors
//
// Every error is an *Error with the library's status code and message.
// Test the kind with errors.Is against ErrInvalidArgument, ErrDecode,
// ErrRejected, ErrStopped, ErrWouldDeadlock and ErrInternal.
//
// # Logging
//
// The library's own log records go to slog.Default() until SetLogger
// routes them to another log/slog logger. That routing is process-wide.
//
// # Building
//
// The package needs cgo. By default it links the libsicore that pkg-config
// finds (installed with cargo cinstall); the build tags sicore_checkout
// (static) and sicore_dynamic link target/release of the repository
// checkout instead. See README.md.
package sicore
