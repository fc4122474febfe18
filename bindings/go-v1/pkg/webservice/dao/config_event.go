package dao

import (
	"github.com/apache/yunikorn-core/pkg/common/configs"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
)

// ValidateConfResponse is the answer of /ws/v1/validate-conf.
type ValidateConfResponse struct {
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason,omitempty"`
}

// ConfigDAOInfo is /ws/v1/config: the configuration in force, the RM's
// extra configuration, and the deadlock detection settings.
type ConfigDAOInfo struct {
	*configs.SchedulerConfig `yaml:",inline"`
	Extra                    map[string]string `yaml:",omitempty" json:",omitempty"`
	DeadlockDetectionEnabled bool
	DeadlockTimeoutSeconds   int
}

// EventRecordDAO is /ws/v1/events/batch: the history's instance ID, the
// lowest and highest record ID it holds, and the records asked for (nil
// when the start ID is not held).
type EventRecordDAO struct {
	InstanceUUID string
	LowestID     uint64
	HighestID    uint64
	EventRecords []*EventRecordInfo
}

// EventRecordInfo is one record of /ws/v1/events/batch and
// /ws/v1/events/stream: the SI record (its fields promoted, so
// r.ObjectID, r.Type and the rest read as on an *si.EventRecord, and
// r.EventRecord is the SI record itself), with sicore's additions, the
// partition and the queue path the record concerns (empty when none, as
// for a node).
type EventRecordInfo struct {
	*si.EventRecord
	Partition string `json:"partition,omitempty"`
	Queue     string `json:"queue,omitempty"`
}
