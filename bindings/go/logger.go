package sicore

/*
#include <stdint.h>
*/
import "C"

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

var (
	loggerMu sync.Mutex
	// libLogger is where library records go; nil means slog.Default(),
	// looked up for each record so that a later slog.SetDefault applies.
	libLogger atomic.Pointer[slog.Logger]
	// routed tells whether the library's forwarding to Go is installed
	// (guarded by loggerMu): by the first New, or by SetLogger.
	routed     bool
	logContext = context.Background()
)

// SetLogger routes the library's log records to l, for records at level or
// more severe. A nil l restores the default: until SetLogger is called,
// the library's records go to slog.Default() (looked up for each record,
// so slog.SetDefault takes effect), filtered by its handler's level. To
// drop the records, pass a logger whose handler discards them.
//
// The routing is process-wide, not per Scheduler: the library has one
// logger for all its schedulers, so the last SetLogger call wins for every
// Scheduler in the process. Records are also filtered by the library's own
// level (WithLogLevel, default info). Each record is logged with its
// message and a "target" attribute naming the library module. Library
// levels map to slog as error, warn, info, debug and LevelTrace.
//
// l's handler is called from library threads and from goroutines making
// calls into the library, so it must be safe for concurrent use, and it
// must not call SetLogger itself.
func SetLogger(l *slog.Logger, level slog.Level) {
	loggerMu.Lock()
	defer loggerMu.Unlock()
	libLogger.Store(l)
	routed = true
	setLibraryLogger(libraryLevel(level))
}

// routeLogsByDefault installs the default routing (every level, to
// slog.Default()) unless SetLogger already chose one. New calls it, so the
// library's records are never silently dropped.
func routeLogsByDefault() {
	loggerMu.Lock()
	defer loggerMu.Unlock()
	if !routed {
		routed = true
		setLibraryLogger(libraryLevel(LevelTrace))
	}
}

// libraryLevel maps a slog level to the library's 1..5 (error..trace).
func libraryLevel(level slog.Level) int32 {
	switch {
	case level > slog.LevelWarn:
		return 1
	case level > slog.LevelInfo:
		return 2
	case level > slog.LevelDebug:
		return 3
	case level > LevelTrace:
		return 4
	default:
		return 5
	}
}

// slogLevel maps the library's 1..5 (error..trace) to a slog level.
func slogLevel(level int32) slog.Level {
	switch level {
	case 1:
		return slog.LevelError
	case 2:
		return slog.LevelWarn
	case 3:
		return slog.LevelInfo
	case 4:
		return slog.LevelDebug
	default:
		return LevelTrace
	}
}

// guardLogs runs the log handler as a guarded callback: in test binaries,
// the default of WithGoexitGuard (the logger is process-wide).
var guardLogs = testing.Testing()

// logHandle marks a thread running the log handler for inAnyCallback; no
// registration has it (a handle's low 32 bits are a slot number).
const logHandle = ^uintptr(0)

// deliverLog hands one library record to the Go logger; the edition's
// exported log function (edition.go) calls it.
func deliverLog(level C.int32_t, target *C.uint8_t, targetLen C.size_t, msg *C.uint8_t, msgLen C.size_t) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "sicore: the slog handler panicked: %v\n", p)
		}
	}()
	l := libLogger.Load()
	if l == nil {
		l = slog.Default()
	}
	lv := slogLevel(int32(level))
	text, tgt := string(borrowed(msg, msgLen)), string(borrowed(target, targetLen))
	if !guardLogs {
		if l.Enabled(logContext, lv) {
			l.Log(logContext, lv, text, slog.String("target", tgt))
		}
		return
	}
	// The handler is the host's code: in a test binary on a goroutine of
	// its own, as guarded callbacks (callbacks.go), so that runtime.Goexit
	// in it ends only that goroutine. The mark makes Close and the waiting
	// calls refuse from inside it, as they would on the library's thread.
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		setCurrentHandle(logHandle)
		returned := false
		defer func() {
			setCurrentHandle(0)
			runtime.UnlockOSThread()
			if !returned {
				if p := recover(); p != nil {
					fmt.Fprintf(os.Stderr, "sicore: the slog handler panicked: %v\n", p)
				} else {
					fmt.Fprintf(os.Stderr, "sicore: the slog handler called runtime.Goexit\n")
				}
			}
			close(done)
		}()
		if l.Enabled(logContext, lv) {
			l.Log(logContext, lv, text, slog.String("target", tgt))
		}
		returned = true
	}()
	<-done
}
