// Code generated from bindings/go/callbacks_common.go by go generate (internal/shared/gen); DO NOT EDIT.

//go:build cgo

// The edition-neutral half of the Go side of the library's callback
// table: the callbacks whose messages and RM methods are the same in both
// editions. Their exported C entry points, whose names differ between the
// editions, are in the edition's callbacks.go. What it calls needs cgo
// (handles.go), so without cgo it is left out and nocgo.go's error is the
// only one.

package sicore

import (
	"fmt"
	"log/slog"
)

// sendEvents hands the RM the events of a sicore.v1.EventRecords batch
// (SendEvent); an empty batch is not passed on.
func sendEvents(h uintptr, msg []byte) {
	notifyCall(h, "SendEvent", func(r *registration) error {
		events, err := decodeEventRecords(msg)
		if err != nil {
			return err
		}
		if len(events) > 0 {
			r.cb.SendEvent(events)
		}
		return nil
	})
}

// updateContainerSchedulingState hands the RM an
// si.UpdateContainerSchedulingStateRequest.
func updateContainerSchedulingState(h uintptr, msg []byte) {
	notifyCall(h, "UpdateContainerSchedulingState", func(r *registration) error {
		m, err := unmarshal[siUpdateContainerSchedulingStateRequest](msg)
		if err != nil {
			return fmt.Errorf("cannot decode the UpdateContainerSchedulingStateRequest: %w", err)
		}
		r.cb.UpdateContainerSchedulingState(m)
		return nil
	})
}

// releaseHandle is the table's release: the library no longer calls the
// registration h. A bad handle is logged, as nothing can be returned.
func releaseHandle(h uintptr) {
	defer func() {
		if p := recover(); p != nil {
			slog.Default().Error("sicore: bad handle in release", "panic", fmt.Sprint(p))
		}
	}()
	lookup(h).free()
}
