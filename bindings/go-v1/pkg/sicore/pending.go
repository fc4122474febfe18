// Code generated from bindings/go/pending.go by go generate (internal/shared/gen); DO NOT EDIT.

//go:build cgo

// Why an ask waits: typed views of the state dump's pending_reason
// (docs/why-pending.md in the project lists the causes and their fields).
// Edition-neutral: the dump is the same JSON in both editions.

package sicore

import (
	"encoding/json"
	"errors"
	"fmt"
)

// PendingCause is the kind of a PendingReason.
type PendingCause string

// The causes an ask waits for.
const (
	// CauseApplicationLimit: the application waits for a running slot
	// (a queue, user or group maxapplications; Scope, Name, Queue, Limit).
	CauseApplicationLimit PendingCause = "applicationLimit"
	// CauseQueueHeadroom: a queue on the ask's path lacks room (Queue,
	// Resource, Asked, Free).
	CauseQueueHeadroom PendingCause = "queueHeadroom"
	// CauseUserLimit: a user or group resource limit (Scope, Name, Queue,
	// Resource, Asked, Free).
	CauseUserLimit PendingCause = "userLimit"
	// CauseResourceType: a resource type the queue or partition does not
	// accept (Scope, Queue, Resource).
	CauseResourceType PendingCause = "resourceType"
	// CauseNodes: nodes were tried and none took the ask (Nodes).
	CauseNodes PendingCause = "nodes"
	// CauseRequiredNodeMissing: the ask's required node is not registered.
	CauseRequiredNodeMissing PendingCause = "requiredNodeMissing"
	// CauseReserved: a node is held for the ask (ReservedNode).
	CauseReserved PendingCause = "reserved"
	// CauseGangPlaceholders: a real gang member while its task group
	// still asks placeholders (Gang).
	CauseGangPlaceholders PendingCause = "gangPlaceholders"
	// CauseGangReplacement: a real gang member waiting for a placeholder
	// to be replaced (Gang).
	CauseGangReplacement PendingCause = "gangReplacement"
	// CauseGangTimeout: the placeholder timeout fired (Gang.TimeoutAt,
	// Gang.TimeoutOutcome).
	CauseGangTimeout PendingCause = "gangTimeout"
)

// PendingReason is why one ask waits: the cause the last scheduling pass
// found, or the state holds. Times are Unix nanoseconds (0: unknown). The
// fields after Passes are set only when the cause names them (the
// constants of PendingCause say which).
type PendingReason struct {
	Cause PendingCause `json:"cause"`
	// Message is one line, worded like kube-scheduler's FailedScheduling.
	Message string `json:"message"`
	// Group is the grouping key of the REST pending route.
	Group string `json:"group"`
	// Since is when this cause was first found (0: read from the state).
	Since int64 `json:"since"`
	// LastTried is the last pass that tried the ask (0: none did).
	LastTried int64 `json:"last_tried"`
	// Passes is how many passes found the same cause.
	Passes uint32 `json:"passes"`

	// Scope is whose limit: queue, user, group or partition.
	Scope string `json:"scope,omitempty"`
	// Name is the user or group named.
	Name string `json:"name,omitempty"`
	// Queue is the queue named.
	Queue string `json:"queue,omitempty"`
	// Limit is a maxapplications limit.
	Limit uint64 `json:"limit,omitempty"`
	// Resource is the resource type lacking; Asked and Free its amounts.
	Resource string `json:"resource,omitempty"`
	Asked    int64  `json:"asked,omitempty"`
	Free     int64  `json:"free,omitempty"`
	// Nodes are the counts of the pass that tried the nodes.
	Nodes *NodeCounts `json:"nodes,omitempty"`
	// ReservedNode is the node reserved for the ask.
	ReservedNode string `json:"reserved_node,omitempty"`
	// Gang is the gang state, for any cause of a gang member.
	Gang *GangState `json:"gang,omitempty"`
	// Preemption is the last preemption attempt, when one was made.
	Preemption *PreemptionAttempt `json:"preemption,omitempty"`
	// AllocationLog is YuniKorn's allocationLog, oldest first.
	AllocationLog []AllocationLogEntry `json:"allocation_log"`
}

// NodeCounts is what a pass found on the nodes it tried.
type NodeCounts struct {
	// Total nodes in the partition; Examined by the pass.
	Total    int    `json:"total"`
	Examined uint32 `json:"examined"`
	// Insufficient is, per resource type, the nodes short of it.
	Insufficient map[string]uint32 `json:"insufficient"`
	// Refused by the RM's predicates, with its texts grouped.
	Refused  uint32      `json:"refused"`
	Refusals []RMRefusal `json:"refusals"`
	// Unschedulable (draining) nodes.
	Unschedulable uint32 `json:"unschedulable"`
	// ReservedForOther: nodes reserved for another ask.
	ReservedForOther uint32 `json:"reserved_for_other"`
	// RequiredNodeMissing: the ask's required node is not registered.
	RequiredNodeMissing bool `json:"required_node_missing"`
}

// RMRefusal is one text of the RM's predicates and how many nodes gave it.
type RMRefusal struct {
	Reason string `json:"reason"`
	Count  uint32 `json:"count"`
}

// GangState is the gang state of the ask's application, for its task group.
type GangState struct {
	TaskGroup string `json:"task_group"`
	// Placed placeholders (held or replaced) of Total asked.
	Placed uint64 `json:"placed"`
	Total  uint64 `json:"total"`
	// WaitingFor is "placeholders" or "replacement".
	WaitingFor string `json:"waiting_for"`
	// TimeoutAt is when the placeholder timeout fired (0: not), and
	// TimeoutOutcome what it did.
	TimeoutAt      int64  `json:"timeout_at"`
	TimeoutOutcome string `json:"timeout_outcome,omitempty"`
}

// PreemptionAttempt is the last preemption attempt for an ask.
type PreemptionAttempt struct {
	Attempted int64 `json:"attempted"`
	// Outcome: guaranteeCheck, fence, noVictims, rmRefusedEveryNode,
	// shortOfResources, attemptsExhausted or waitingForVictims.
	Outcome string `json:"outcome"`
}

// AllocationLogEntry is one entry of YuniKorn's allocationLog.
type AllocationLogEntry struct {
	Message        string `json:"message"`
	LastOccurrence int64  `json:"last_occurrence"`
	Count          uint32 `json:"count"`
}

// ErrApplicationNotFound is returned by PendingReasons for an application
// the state dump does not hold.
var ErrApplicationNotFound = errors.New("sicore: application not in the state dump")

// The part of the state dump PendingReasons reads.
type pendingDump struct {
	Partitions []struct {
		Name         string `json:"name"`
		Applications []struct {
			ID          string `json:"id"`
			PendingAsks []struct {
				AllocationKey string         `json:"allocation_key"`
				PendingReason *PendingReason `json:"pending_reason"`
			} `json:"pending_asks"`
		} `json:"applications"`
	} `json:"partitions"`
}

// PendingReasons reads, from a state dump (StateDump's JSON), why each
// waiting ask of the application waits, by allocation key. An ask no pass
// has tried yet maps to nil. partition is the name the dump shows (for
// example "default"); "" finds the application in any partition and fails
// when it is in more than one. The dump lists a bounded number of asks per
// application, the first in scheduling order.
func PendingReasons(dump []byte, partition, applicationID string) (map[string]*PendingReason, error) {
	var d pendingDump
	if err := json.Unmarshal(dump, &d); err != nil {
		return nil, fmt.Errorf("sicore: reading the state dump: %w", err)
	}
	var out map[string]*PendingReason
	for _, p := range d.Partitions {
		if partition != "" && p.Name != partition {
			continue
		}
		for _, a := range p.Applications {
			if a.ID != applicationID {
				continue
			}
			if out != nil {
				return nil, fmt.Errorf("sicore: application %q is in more than one partition; name one", applicationID)
			}
			out = make(map[string]*PendingReason, len(a.PendingAsks))
			for _, k := range a.PendingAsks {
				out[k.AllocationKey] = k.PendingReason
			}
		}
	}
	if out == nil {
		return nil, fmt.Errorf("%w: %q", ErrApplicationNotFound, applicationID)
	}
	return out, nil
}

// PendingReasons is why each waiting ask of the application waits, read
// from a fresh StateDump (see the function PendingReasons). Like
// StateDump it waits for the scheduling thread, so inside a callback it
// returns an error matching ErrWouldDeadlock.
func (s *Scheduler) PendingReasons(partition, applicationID string) (map[string]*PendingReason, error) {
	dump, err := s.StateDump()
	if err != nil {
		return nil, err
	}
	return PendingReasons(dump, partition, applicationID)
}
