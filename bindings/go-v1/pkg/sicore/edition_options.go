//go:build cgo

package sicore

import (
	"fmt"
	"time"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
)

// editionConfig holds the options only this edition has: none (the
// v0.12 binding's configuration directory, in-memory policy groups and
// Starting timeout have no v1.8 form: the configuration travels in the
// registration).
type editionConfig struct{}

// appendTo writes this edition's own SchedulerOptions fields: none.
func (editionConfig) appendTo(b []byte) []byte { return b }

// WithRESTAddress starts the scheduler's REST service (the /ws/v1 endpoints and
// /metrics of the project's docs/rest-and-metrics.md) on addr, a host:port such as
// "127.0.0.1:9080"; port 0 picks a free port (see Scheduler.RESTAddress).
// Without it no port is opened.
func WithRESTAddress(addr string) Option {
	return func(c *config) error {
		if addr == "" {
			return fmt.Errorf("WithRESTAddress: empty address")
		}
		c.restAddress = addr
		return nil
	}
}

// WithOutstandingCheckInterval sets the period of the check that reports
// requests the scheduler cannot place (library default 1s).
func WithOutstandingCheckInterval(d time.Duration) Option {
	return durationOption("WithOutstandingCheckInterval", d, func(c *config, ms uint64) { c.outstandingCheckIntervalMs = ms })
}

// WithEventTypes chooses the event record types handed to
// ResourceManagerCallback.SendEvent (the library's default set, REQUEST
// and NODE, applies otherwise). APP, QUEUE and USERGROUP records (user
// and group usage, caps and links under limits) are opt-in. The k8shim
// v1.8 publishes REQUEST records as pod events and reads NODE records; it
// ignores the others:
//
//	WithEventTypes(si.EventRecord_REQUEST, si.EventRecord_NODE, si.EventRecord_APP)
//
// The types given replace the default set. WithoutEvents still turns
// events off altogether.
func WithEventTypes(types ...si.EventRecord_Type) Option {
	return func(c *config) error {
		if len(types) == 0 {
			return fmt.Errorf("WithEventTypes: no event type given (use WithoutEvents to send none)")
		}
		c.eventTypes = c.eventTypes[:0]
		for _, t := range types {
			name, known := si.EventRecord_Type_name[int32(t)]
			if !known || t == si.EventRecord_UNKNOWN_EVENTRECORD_TYPE {
				return fmt.Errorf("WithEventTypes: unknown event type %d", int32(t))
			}
			c.eventTypes = append(c.eventTypes, name)
		}
		return nil
	}
}

// WithoutPredicates registers every resource manager without a
// Predicates callback: the library never calls
// ResourceManagerCallback.Predicates and every node with room for a
// request fits. Use it only when the RM's Predicates accepts every node:
// it removes a call into Go per node tried on the scheduling path. An RM
// whose Predicates can refuse a node (the k8shim's does) must not use it.
func WithoutPredicates() Option {
	return func(c *config) error {
		c.withoutPredicates = true
		return nil
	}
}
