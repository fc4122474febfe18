package sicore

/*
#include <stdint.h>
#include "sicore.h"
*/
import "C"

import (
	"fmt"
	"log/slog"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
	"github.com/golang/protobuf/proto"
	"google.golang.org/protobuf/encoding/protowire"
)

// unmarshal decodes a message with proto.Unmarshal; the messages that are
// not sent per allocation take this path (decode.go has the others).
func unmarshal[M any, P interface {
	*M
	proto.Message
}](b []byte) (P, error) {
	m := P(new(M))
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, err
	}
	return m, nil
}

//export sicoreGoUpdateAllocation
func sicoreGoUpdateAllocation(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) C.int32_t {
	return statusCall(h, "UpdateAllocation", msg, n, reply, decodeAllocationResponse,
		api.ResourceManagerCallback.UpdateAllocation)
}

//export sicoreGoUpdateApplication
func sicoreGoUpdateApplication(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) C.int32_t {
	return statusCall(h, "UpdateApplication", msg, n, reply, unmarshal[si.ApplicationResponse],
		api.ResourceManagerCallback.UpdateApplication)
}

//export sicoreGoUpdateNode
func sicoreGoUpdateNode(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) C.int32_t {
	return statusCall(h, "UpdateNode", msg, n, reply, unmarshal[si.NodeResponse],
		api.ResourceManagerCallback.UpdateNode)
}

//export sicoreGoPredicates
func sicoreGoPredicates(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) C.int32_t {
	return statusCall(h, "Predicates", msg, n, reply, decodePredicatesArgs,
		api.ResourceManagerCallback.Predicates)
}

//export sicoreGoReSyncSchedulerCache
func sicoreGoReSyncSchedulerCache(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) C.int32_t {
	return statusCall(h, "ReSyncSchedulerCache", msg, n, reply, decodeReSyncSchedulerCacheArgs,
		api.ResourceManagerCallback.ReSyncSchedulerCache)
}

//export sicoreGoSendEvent
func sicoreGoSendEvent(h C.uintptr_t, msg *C.uint8_t, n C.size_t) {
	notifyCall(uintptr(h), "SendEvent", func(r *registration) error {
		events, err := decodeEventRecords(borrowed(msg, n))
		if err != nil {
			return err
		}
		if len(events) > 0 {
			r.cb.SendEvent(events)
		}
		return nil
	})
}

//export sicoreGoUpdateContainerSchedulingState
func sicoreGoUpdateContainerSchedulingState(h C.uintptr_t, msg *C.uint8_t, n C.size_t) {
	notifyCall(uintptr(h), "UpdateContainerSchedulingState", func(r *registration) error {
		m := new(si.UpdateContainerSchedulingStateRequest)
		if err := proto.Unmarshal(borrowed(msg, n), m); err != nil {
			return fmt.Errorf("cannot decode the UpdateContainerSchedulingStateRequest: %w", err)
		}
		r.cb.UpdateContainerSchedulingState(m)
		return nil
	})
}

//export sicoreGoUpdateConfiguration
func sicoreGoUpdateConfiguration(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) {
	setReply(reply, configurationAnswer(uintptr(h), borrowed(msg, n)))
}

// configurationAnswer runs UpdateConfiguration and returns the encoded
// si.UpdateConfigurationResponse for the library. A nil response, a
// decoding failure or a panic becomes an answer with Success false and
// the reason.
func configurationAnswer(h uintptr, msg []byte) (answer []byte) {
	const method = "UpdateConfiguration"
	failed := func(reason string) []byte {
		b, _ := proto.Marshal(&si.UpdateConfigurationResponse{Success: false, Reason: reason})
		return b
	}
	var r *registration
	defer func() {
		if p := recover(); p != nil {
			logPanic(r, method, p)
			answer = failed(fmt.Sprintf("panic in ResourceManagerCallback.%s: %v", method, p))
		}
	}()
	r = lookup(h)
	req := new(si.UpdateConfigurationRequest)
	if err := proto.Unmarshal(msg, req); err != nil {
		return failed(fmt.Sprintf("sicore Go binding: cannot decode the UpdateConfigurationRequest: %v", err))
	}
	var resp *si.UpdateConfigurationResponse
	if failure := r.run(method, func() { resp = r.cb.UpdateConfiguration(req) }); failure != "" {
		return failed(failure)
	}
	if resp == nil {
		return failed("ResourceManagerCallback.UpdateConfiguration returned nil")
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		return failed(fmt.Sprintf("sicore Go binding: cannot encode the UpdateConfigurationResponse: %v", err))
	}
	return b
}

//export sicoreGoRelease
func sicoreGoRelease(h C.uintptr_t) {
	defer func() {
		if p := recover(); p != nil {
			slog.Default().Error("sicore: bad handle in release", "panic", fmt.Sprint(p))
		}
	}()
	lookup(uintptr(h)).free()
}

// decodeEventRecords decodes a sicore.v1.EventRecords message, which is
// `repeated si.v1.EventRecord events = 1`. Rather than generate code for
// a one-field wrapper, it walks the wire format with protowire and hands
// each field-1 payload to proto.Unmarshal as an si.EventRecord; other
// fields, which a later library version might add, are skipped.
func decodeEventRecords(b []byte) ([]*si.EventRecord, error) {
	var events []*si.EventRecord
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("cannot decode EventRecords: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, fmt.Errorf("cannot decode EventRecords.events: %w", protowire.ParseError(m))
			}
			ev := new(si.EventRecord)
			if err := proto.Unmarshal(v, ev); err != nil {
				return nil, fmt.Errorf("cannot decode EventRecords.events[%d]: %w", len(events), err)
			}
			events = append(events, ev)
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil, fmt.Errorf("cannot decode EventRecords: %w", protowire.ParseError(m))
		}
		b = b[m:]
	}
	return events, nil
}
