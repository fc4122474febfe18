package sicore

import (
	"github.com/apache/yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"google.golang.org/protobuf/proto"
)

// What the files this binding shares with the other edition's (written
// once in bindings/go, copied into bindings/go-v1 by go generate; the list
// is internal/shared's Files in bindings/go-v1) take from this edition:
//   - the SI module's callback interface and the si messages the shared
//     decoders, callbacks and Scheduler methods read or write;
//   - the protobuf library's Message, Marshal and Unmarshal
//     (google.golang.org/protobuf);
//   - from the edition's other files, which need cgo as this one does
//     not: the C names of shim.c, which differ between the editions so
//     that their symbols cannot clash (callbacks.go; shim_common.h takes
//     them as macros), the C entry points of registration and the queued
//     requests (scheduler.go); and the options only this edition has
//     (edition_options.go).

// rmCallback is the RM's callback interface of this edition's SI module.
type rmCallback = api.ResourceManagerCallback

// This edition's si messages that the shared files name.
type (
	siAllocationRequest                     = si.AllocationRequest
	siEventRecord                           = si.EventRecord
	siPredicatesArgs                        = si.PredicatesArgs
	siQuantity                              = si.Quantity
	siRegisterResourceManagerResponse       = si.RegisterResourceManagerResponse
	siResource                              = si.Resource
	siUpdateContainerSchedulingStateRequest = si.UpdateContainerSchedulingStateRequest
)

// protoMessage is this edition's protobuf library's message interface.
type protoMessage = proto.Message

func protoMarshal(m protoMessage) ([]byte, error) { return proto.Marshal(m) }

func protoUnmarshal(b []byte, m protoMessage) error { return proto.Unmarshal(b, m) }

// absentQuantity is what this edition's proto.Unmarshal stores for a
// resource map entry without a value (an empty Quantity); the fast decoder
// (decode_common.go) stores the same.
func absentQuantity() *siQuantity { return new(si.Quantity) }
