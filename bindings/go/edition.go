package sicore

/*
#include <stdint.h>
void sicore_go_set_logger(int32_t max_level);
void sicore_go_set_current_handle(uintptr_t h);
uintptr_t sicore_go_current_handle(void);
*/
import "C"

import "github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/api"

// What the files this binding shares with the other edition's (errors.go,
// handles.go, lifecycle.go, logger.go, options.go and wire.go: written
// once in bindings/go, copied into bindings/go-v1 by go generate) take
// from this edition: the SI module's callback interface, and the C names
// of shim.c, which differ between the editions so that their symbols
// cannot clash. decode.go has the edition's si.PredicatesArgs for wire.go,
// edition_options.go the options only this edition has.

// rmCallback is the RM's callback interface of this edition's SI module.
type rmCallback = api.ResourceManagerCallback

// currentHandle is the handle of the callback running on this thread, 0
// outside callbacks; see shim.c.
func currentHandle() uintptr { return uintptr(C.sicore_go_current_handle()) }

// setCurrentHandle marks the calling thread as running a callback of h
// (0: none); see shim.c.
func setCurrentHandle(h uintptr) { C.sicore_go_set_current_handle(C.uintptr_t(h)) }

// setLibraryLogger installs the library's forwarding of records up to
// maxLevel to deliverLog (0: none).
func setLibraryLogger(maxLevel int32) { C.sicore_go_set_logger(C.int32_t(maxLevel)) }

//export sicoreGoLog
func sicoreGoLog(level C.int32_t, target *C.uint8_t, targetLen C.size_t, msg *C.uint8_t, msgLen C.size_t) {
	deliverLog(level, target, targetLen, msg, msgLen)
}
