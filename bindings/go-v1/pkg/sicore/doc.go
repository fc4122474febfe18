// Package sicore is the Go binding of sicore's SI v1.x edition: a
// scheduler core that implements the YuniKorn scheduler interface v1.8
// and is shipped as a C library (libsicore). It talks to the library
// through its sicore_v1_* function family.
//
// A resource manager written against the upstream Go module
// github.com/apache/yunikorn-scheduler-interface v1.8.0 (package lib/go/api
// for SchedulerAPI and ResourceManagerCallback, lib/go/si for the
// messages) uses a *Scheduler as its api.SchedulerAPI:
//
//	sched, err := sicore.New()
//	if err != nil { ... }
//	defer sched.Close()
//	var api api.SchedulerAPI = sched
//	api.RegisterResourceManager(&si.RegisterResourceManagerRequest{..., Config: queuesYAML}, myCallback)
//
// An RM that starts its core through yunikorn-core's pkg/entrypoint (the
// k8shim does) needs no code change at all: see package
// github.com/apache/yunikorn-core/pkg/entrypoint of this module.
//
// # Why one module, and why not the v0.12 binding
//
// This package lives in the module github.com/apache/yunikorn-core, the
// drop-in for the YuniKorn core, rather than in a module of its own that
// the drop-in imports. An RM switches to sicore with a single replace
// directive in its go.mod, and Go ignores the replace directives of
// dependencies: a drop-in that required another unpublished module would
// force a second replace line on every RM. The drop-in and the binding
// are therefore one module.
//
// It does not import the v0.12 binding (github.com/sicore/sicore/bindings/go)
// either, and never can: both SI editions declare the protobuf package
// si.v1 with the same message names, and protobuf-go panics at start-up on
// duplicate registrations, so one Go binary links only one SI edition.
// The cgo export names of this package (sicoreV1Go*, sicore_v1go_*) differ
// from the v0.12 binding's all the same.
//
// # Calls and callbacks
//
// Every request is encoded with protobuf and handed to the library.
// UpdateAllocation, UpdateApplication and UpdateNode are checked on the
// calling goroutine and queued; their outcome arrives later through the
// resource manager's callbacks, on library threads and never inside the
// RM's own call, so an RM may hold a lock while it calls UpdateAllocation
// that its callbacks also take (the k8shim does). RegisterResourceManager
// and UpdateConfiguration wait for the core. Stop is Close.
//
// The library hands the RM each decision through UpdateAllocation and
// waits for that callback to return before it asks Predicates for the
// next decision, so an RM that assumes a pod inside its UpdateAllocation
// callback answers Predicates from an up-to-date cache.
//
// Callbacks may run concurrently, so the api.ResourceManagerCallback must
// be safe for concurrent use. A callback may call UpdateAllocation,
// UpdateApplication and UpdateNode; the synchronous calls
// (RegisterResourceManager, UpdateConfiguration, StateDump, Close, Stop)
// return an error matching ErrWouldDeadlock from inside a callback of any
// Scheduler. An error returned by a callback is passed to the library
// with its message; a panic in a callback is recovered, logged (see
// WithLogger) and passed on as an error (PreemptionPredicates then answers
// "does not fit", index -1), so it never unwinds into the library. In test
// binaries runtime.Goexit in a callback (t.FailNow) is caught the same
// way; see WithGoexitGuard.
//
// The optional api.StateDumpPlugin is found by a type assertion on the
// callback at registration; its JSON becomes part of the library's state
// dump.
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
// The package needs cgo. How it finds the library is chosen by build tags:
//
//   - none (the default): the libsicore that pkg-config finds as "sicore"
//     (installed with cargo cinstall; set PKG_CONFIG_PATH for a prefix
//     other than /usr/local);
//   - sicore_checkout: the static library target/release/libsicore.a of
//     the sicore checkout this module sits in (cargo build --release), so
//     the binary needs no libsicore.so at run time;
//   - sicore_dynamic: target/release/libsicore.so of that checkout, found
//     at run time through an rpath.
package sicore

// The files that start with a "Code generated from bindings/go/" line
// (internal/shared's Files: errors.go, handles.go, lifecycle.go,
// logger.go, options.go, wire.go, and the *_common files, the neutral
// halves of decode.go, scheduler.go, callbacks.go and shim.c) are copies
// of the files of the same names in bindings/go (the v0.12 binding); edit
// those, then run go generate here. TestSharedFilesFresh checks the copies.
//go:generate go run ../../internal/shared/gen
