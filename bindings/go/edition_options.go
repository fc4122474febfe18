//go:build cgo

package sicore

import (
	"fmt"
	"sort"
	"time"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
	"google.golang.org/protobuf/encoding/protowire"
)

// editionConfig holds the options only this edition has.
type editionConfig struct {
	configDir         string
	policyConfigs     map[string]string
	appStartTimeoutMs *uint64
}

// Field numbers of sicore.v1.SchedulerOptions (proto/sicore.proto) that
// only this edition sets.
const (
	fieldConfigDir         = 1
	fieldPolicyConfigs     = 2
	fieldAppStartTimeoutMs = 8
)

// appendTo writes this edition's own SchedulerOptions fields.
func (e *editionConfig) appendTo(b []byte) []byte {
	if e.configDir != "" {
		b = protowire.AppendTag(b, fieldConfigDir, protowire.BytesType)
		b = protowire.AppendString(b, e.configDir)
	}
	groups := make([]string, 0, len(e.policyConfigs))
	for g := range e.policyConfigs {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		// A map entry is a nested message {key = 1; value = 2}.
		var entry []byte
		entry = protowire.AppendTag(entry, 1, protowire.BytesType)
		entry = protowire.AppendString(entry, g)
		entry = protowire.AppendTag(entry, 2, protowire.BytesType)
		entry = protowire.AppendString(entry, e.policyConfigs[g])
		b = protowire.AppendTag(b, fieldPolicyConfigs, protowire.BytesType)
		b = protowire.AppendBytes(b, entry)
	}
	if e.appStartTimeoutMs != nil {
		b = protowire.AppendTag(b, fieldAppStartTimeoutMs, protowire.VarintType)
		b = protowire.AppendVarint(b, *e.appStartTimeoutMs)
	}
	return b
}

// WithRESTAddress starts the scheduler's REST service (the YuniKorn v0.12
// /ws/v1 endpoints and /metrics) on addr, a host:port such as
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
// asks the scheduler cannot place (library default 1s).
func WithOutstandingCheckInterval(d time.Duration) Option {
	return durationOption("WithOutstandingCheckInterval", d, func(c *config, ms uint64) { c.outstandingCheckIntervalMs = ms })
}

// WithEventTypes chooses the event record types handed to
// ResourceManagerCallback.SendEvent. By default the library sends REQUEST
// and NODE records, the types a YuniKorn v0.12 RM handles (it logs a
// warning for any other type); APP records (application state changes),
// QUEUE records (queue changes; for SI v0.12 only a configuration the
// reload watcher refused) and, for SI v1.x RMs, USERGROUP records (user
// and group usage, caps and links under limits) are opt-in:
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
// ResourceManagerCallback.Predicates, every node with room for an ask
// fits, and the ReSyncSchedulerCache that announces new allocations comes
// from the delivery thread right before their UpdateAllocation, one per
// batch, instead of from the core thread before each predicate call
// (the project's docs/c-api.md, "ReSync before Predicates"). Use it when the RM's Predicates
// accepts every node (no node filters to run): it removes two calls into
// Go per allocation on the core thread. An RM whose Predicates can refuse
// a node must not use it, since its answers would never be asked.
func WithoutPredicates() Option {
	return func(c *config) error {
		c.withoutPredicates = true
		return nil
	}
}

// WithConfigDir sets the directory of the policy group files: policy group
// P reads <dir>/P.yaml. Without it the library searches /etc/yunikorn, then
// the current directory; a policy group with no file and no in-memory
// configuration gets the embedded default (partition "default", queue
// "root" open to everyone, a "provided" placement rule that creates queues).
func WithConfigDir(dir string) Option {
	return func(c *config) error {
		c.configDir = dir
		return nil
	}
}

// WithPolicyConfig gives the queues.yaml text of one policy group in
// memory; it wins over a file. Repeat the option for several groups; a
// later call for the same group replaces the earlier text.
func WithPolicyConfig(policyGroup, queuesYAML string) Option {
	return func(c *config) error {
		if policyGroup == "" {
			return fmt.Errorf("WithPolicyConfig: empty policy group")
		}
		if c.policyConfigs == nil {
			c.policyConfigs = make(map[string]string)
		}
		c.policyConfigs[policyGroup] = queuesYAML
		return nil
	}
}

// WithAppStartTimeout sets how long an application stays Starting before
// it moves to Running (library default 5 minutes).
func WithAppStartTimeout(d time.Duration) Option {
	return durationOption("WithAppStartTimeout", d, func(c *config, ms uint64) { c.appStartTimeoutMs = &ms })
}
