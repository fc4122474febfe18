// Package locking stands in for yunikorn-core's pkg/locking, which the
// k8shim v1.8 imports: its own pkg/locking wraps github.com/sasha-s/go-deadlock
// and relies on the core's package to configure that library once, from
// the environment, before any lock is used.
//
// The configuration matters: go-deadlock left at its defaults watches every
// lock and ends the process when one is held for 30 seconds. So this
// package, like the core's, turns detection off unless
// DEADLOCK_DETECTION_ENABLED is true, and reads the same variables:
//
//   - DEADLOCK_DETECTION_ENABLED (bool, default false): watch locks;
//   - DEADLOCK_TIMEOUT_SECONDS (int, default 60): how long a lock may be
//     waited for before it is reported;
//   - DEADLOCK_EXIT (bool, default false): end the process (exit status 1)
//     on a report;
//   - DEADLOCK_DISABLE_LOCK_ORDER (bool, default false): skip the lock
//     order checks.
//
// A report is written to standard error. sicore's own locks are in the
// Rust library and are not watched.
package locking

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	godeadlock "github.com/sasha-s/go-deadlock"
)

// The environment variables read at start-up.
const (
	// EnvDeadlockDetectionEnabled turns deadlock detection on.
	EnvDeadlockDetectionEnabled = "DEADLOCK_DETECTION_ENABLED"
	// EnvDeadlockTimeoutSeconds sets the detection timeout in seconds.
	EnvDeadlockTimeoutSeconds = "DEADLOCK_TIMEOUT_SECONDS"
	// EnvExitOnDeadlock makes a detected deadlock end the process.
	EnvExitOnDeadlock = "DEADLOCK_EXIT"
	// EnvDisableLockOrder turns the lock order checks off.
	EnvDisableLockOrder = "DEADLOCK_DISABLE_LOCK_ORDER"
)

const defaultTimeoutSeconds = 60

var (
	tracking bool
	timeout  int
	exit     bool
	detected atomic.Bool
)

func init() {
	tracking = envBool(EnvDeadlockDetectionEnabled)
	timeout = defaultTimeoutSeconds
	if v, err := strconv.ParseInt(os.Getenv(EnvDeadlockTimeoutSeconds), 10, 32); err == nil && v > 0 {
		timeout = int(v)
	}
	exit = envBool(EnvExitOnDeadlock)
	godeadlock.Opts.Disable = !tracking
	godeadlock.Opts.DeadlockTimeout = time.Duration(timeout) * time.Second
	godeadlock.Opts.DisableLockOrderDetection = envBool(EnvDisableLockOrder)
	godeadlock.Opts.LogBuf = os.Stderr
	godeadlock.Opts.OnPotentialDeadlock = onPotentialDeadlock
	if tracking {
		fmt.Fprintf(os.Stderr, "deadlock detection on: timeout %ds, exit on deadlock %t\n", timeout, exit)
	}
}

// envBool reads a boolean variable; unset or unparsable is false.
func envBool(name string) bool {
	v, err := strconv.ParseBool(os.Getenv(name))
	return err == nil && v
}

func onPotentialDeadlock() {
	detected.Store(true)
	if exit {
		os.Exit(1)
	}
}

// IsTrackingEnabled reports whether deadlock detection is on
// (DEADLOCK_DETECTION_ENABLED). The k8shim calls it to make sure this
// package's configuration ran before its own locks are used.
func IsTrackingEnabled() bool {
	return tracking
}

// GetDeadlockTimeoutSeconds returns the detection timeout in seconds.
func GetDeadlockTimeoutSeconds() int {
	return timeout
}

// IsDeadlockDetected reports whether a potential deadlock was reported.
func IsDeadlockDetected() bool {
	return detected.Load()
}
