// Package dao stands in for yunikorn-core's pkg/webservice/dao: the Go
// types of the scheduler's REST answers (/ws/v1/...), with the reference's
// exported names and JSON field names, so that tools written against the
// YuniKorn core (the k8shim's e2e framework among them) decode sicore's
// answers unchanged. Resources are objects of name to quantity; times are
// Unix nanoseconds.
//
// Where sicore adds to an answer, the type says so (EventRecordInfo has
// the partition and queue of each event record).
package dao

import "time"

// PartitionInfo is one element of /ws/v1/partitions.
type PartitionInfo struct {
	ClusterID               string            `json:"clusterId"`
	Name                    string            `json:"name"`
	Capacity                PartitionCapacity `json:"capacity"`
	NodeSortingPolicy       NodeSortingPolicy `json:"nodeSortingPolicy"`
	PreemptionEnabled       bool              `json:"preemptionEnabled"`
	QuotaPreemptionEnabled  bool              `json:"quotaPreemptionEnabled"`
	TotalNodes              int               `json:"totalNodes,omitempty"`
	Applications            map[string]int    `json:"applications,omitempty"`
	TotalContainers         int               `json:"totalContainers,omitempty"`
	State                   string            `json:"state,omitempty"`
	LastStateTransitionTime int64             `json:"lastStateTransitionTime,omitempty"`
}

// PartitionCapacity is a partition's total, used and utilisation (percent).
type PartitionCapacity struct {
	Capacity     map[string]int64 `json:"capacity,omitempty"`
	UsedCapacity map[string]int64 `json:"usedCapacity,omitempty"`
	Utilization  map[string]int64 `json:"utilization,omitempty"`
}

// NodeSortingPolicy is a partition's node order.
type NodeSortingPolicy struct {
	Type            string             `json:"type,omitempty"`
	ResourceWeights map[string]float64 `json:"resourceWeights,omitempty"`
}

// TemplateInfo is the child template of a parent queue.
type TemplateInfo struct {
	MaxApplications    uint64            `json:"maxApplications,omitempty"`
	MaxResource        map[string]int64  `json:"maxResource,omitempty"`
	GuaranteedResource map[string]int64  `json:"guaranteedResource,omitempty"`
	Properties         map[string]string `json:"properties,omitempty"`
}

// PartitionQueueDAOInfo is a queue of /ws/v1/partition/{p}/queues (the
// root, with its children) and /partition/{p}/queue/{q}.
type PartitionQueueDAOInfo struct {
	QueueName              string                  `json:"queuename"`
	Status                 string                  `json:"status,omitempty"`
	Partition              string                  `json:"partition"`
	PendingResource        map[string]int64        `json:"pendingResource,omitempty"`
	MaxResource            map[string]int64        `json:"maxResource,omitempty"`
	GuaranteedResource     map[string]int64        `json:"guaranteedResource,omitempty"`
	AllocatedResource      map[string]int64        `json:"allocatedResource,omitempty"`
	PreemptingResource     map[string]int64        `json:"preemptingResource,omitempty"`
	HeadRoom               map[string]int64        `json:"headroom,omitempty"`
	IsLeaf                 bool                    `json:"isLeaf"`
	IsManaged              bool                    `json:"isManaged"`
	Properties             map[string]string       `json:"properties,omitempty"`
	Parent                 string                  `json:"parent,omitempty"`
	TemplateInfo           *TemplateInfo           `json:"template,omitempty"`
	Children               []PartitionQueueDAOInfo `json:"children,omitempty"`
	ChildNames             []string                `json:"childNames,omitempty"`
	AbsUsedCapacity        map[string]int64        `json:"absUsedCapacity,omitempty"`
	MaxRunningApps         uint64                  `json:"maxRunningApps,omitempty"`
	RunningApps            uint64                  `json:"runningApps,omitempty"`
	CurrentPriority        int32                   `json:"currentPriority"`
	AllocatingAcceptedApps []string                `json:"allocatingAcceptedApps,omitempty"`
	SortingPolicy          string                  `json:"sortingPolicy,omitempty"`
	PrioritySorting        bool                    `json:"prioritySorting"`
	PreemptionEnabled      bool                    `json:"preemptionEnabled"`
	IsPreemptionFence      bool                    `json:"isPreemptionFence"`
	PreemptionDelay        string                  `json:"preemptionDelay,omitempty"`
	QuotaPreemptionDelay   string                  `json:"quotaPreemptionDelay,omitempty"`
	IsPriorityFence        bool                    `json:"isPriorityFence"`
	PriorityOffset         int32                   `json:"priorityOffset,omitempty"`
}

// ApplicationsDAOInfo is a list of applications under one key.
type ApplicationsDAOInfo struct {
	Applications []ApplicationDAOInfo `json:"applications,omitempty"`
}

// ApplicationDAOInfo is one application.
type ApplicationDAOInfo struct {
	ApplicationID      string                  `json:"applicationID"`
	UsedResource       map[string]int64        `json:"usedResource,omitempty"`
	MaxUsedResource    map[string]int64        `json:"maxUsedResource,omitempty"`
	PendingResource    map[string]int64        `json:"pendingResource,omitempty"`
	Partition          string                  `json:"partition"`
	QueueName          string                  `json:"queueName"`
	SubmissionTime     int64                   `json:"submissionTime,omitempty"`
	FinishedTime       *int64                  `json:"finishedTime,omitempty"`
	Requests           []*AllocationAskDAOInfo `json:"requests,omitempty"`
	Allocations        []*AllocationDAOInfo    `json:"allocations,omitempty"`
	State              string                  `json:"applicationState,omitempty"`
	User               string                  `json:"user,omitempty"`
	Groups             []string                `json:"groups,omitempty"`
	RejectedMessage    string                  `json:"rejectedMessage,omitempty"`
	StateLog           []*StateDAOInfo         `json:"stateLog,omitempty"`
	PlaceholderData    []*PlaceholderDAOInfo   `json:"placeholderData,omitempty"`
	HasReserved        bool                    `json:"hasReserved,omitempty"`
	Reservations       []string                `json:"reservations,omitempty"`
	MaxRequestPriority int32                   `json:"maxRequestPriority,omitempty"`
	StartTime          int64                   `json:"startTime,omitempty"`
	ResourceHistory    ResourceHistory         `json:"resourceHistory,omitempty"`
	BackoffDeadline    *time.Time              `json:"backoffDeadline,omitempty"`
}

// StateDAOInfo is one entry of an application's state log.
type StateDAOInfo struct {
	Time             int64  `json:"time,omitempty"`
	ApplicationState string `json:"applicationState,omitempty"`
}

// PlaceholderDAOInfo is a gang's task group.
type PlaceholderDAOInfo struct {
	TaskGroupName string           `json:"taskGroupName,omitempty"`
	Count         int64            `json:"count,omitempty"`
	MinResource   map[string]int64 `json:"minResource,omitempty"`
	Replaced      int64            `json:"replaced,omitempty"`
	TimedOut      int64            `json:"timedout,omitempty"`
}

// ResourceHistory is an application's resource use over time, by
// resource and instance type.
type ResourceHistory struct {
	ResourceUsage       map[string]map[string]int64 `json:"resourceUsage,omitempty"`
	PreemptedResource   map[string]map[string]int64 `json:"preemptedResource,omitempty"`
	PlaceholderResource map[string]map[string]int64 `json:"placeholderResource,omitempty"`
}

// AllocationAskDAOInfo is a pending request of an application.
type AllocationAskDAOInfo struct {
	AllocationKey       string                     `json:"allocationKey"`
	AllocationTags      map[string]string          `json:"allocationTags,omitempty"`
	RequestTime         int64                      `json:"requestTime,omitempty"`
	ResourcePerAlloc    map[string]int64           `json:"resource,omitempty"`
	Priority            string                     `json:"priority,omitempty"`
	RequiredNodeID      string                     `json:"requiredNodeId,omitempty"`
	ApplicationID       string                     `json:"applicationId,omitempty"`
	Placeholder         bool                       `json:"placeholder,omitempty"`
	TaskGroupName       string                     `json:"taskGroupName,omitempty"`
	AllocationLog       []*AllocationAskLogDAOInfo `json:"allocationLog,omitempty"`
	TriggeredPreemption bool                       `json:"triggeredPreemption,omitempty"`
	Originator          bool                       `json:"originator,omitempty"`
	SchedulingAttempted bool                       `json:"schedulingAttempted,omitempty"`
	TriggeredScaleUp    bool                       `json:"triggeredScaleUp,omitempty"`
}

// AllocationAskLogDAOInfo is why a request was not placed, and how often.
type AllocationAskLogDAOInfo struct {
	Message        string `json:"message,omitempty"`
	LastOccurrence int64  `json:"lastOccurrence,omitempty"`
	Count          int32  `json:"count,omitempty"`
}

// AllocationDAOInfo is an allocation of an application on a node.
type AllocationDAOInfo struct {
	AllocationKey    string            `json:"allocationKey"`
	AllocationTags   map[string]string `json:"allocationTags,omitempty"`
	RequestTime      int64             `json:"requestTime,omitempty"`
	AllocationTime   int64             `json:"allocationTime,omitempty"`
	AllocationDelay  int64             `json:"allocationDelay,omitempty"`
	ResourcePerAlloc map[string]int64  `json:"resource,omitempty"`
	Priority         string            `json:"priority,omitempty"`
	NodeID           string            `json:"nodeId,omitempty"`
	ApplicationID    string            `json:"applicationId,omitempty"`
	Placeholder      bool              `json:"placeholder,omitempty"`
	PlaceholderUsed  bool              `json:"placeholderUsed,omitempty"`
	TaskGroupName    string            `json:"taskGroupName,omitempty"`
	Preempted        bool              `json:"preempted,omitempty"`
	Originator       bool              `json:"originator,omitempty"`
}

// ForeignAllocationDAOInfo is an allocation on a node the scheduler did
// not make.
type ForeignAllocationDAOInfo struct {
	AllocationKey    string            `json:"allocationKey"`
	AllocationTags   map[string]string `json:"allocationTags,omitempty"`
	AllocationTime   int64             `json:"allocationTime,omitempty"`
	ResourcePerAlloc map[string]int64  `json:"resource,omitempty"`
	Priority         string            `json:"priority,omitempty"`
	NodeID           string            `json:"nodeId,omitempty"`
	Preemptable      bool              `json:"preemptable,omitempty"`
}

// NodesDAOInfo is the nodes of one partition.
type NodesDAOInfo struct {
	PartitionName string         `json:"partitionName"`
	Nodes         []*NodeDAOInfo `json:"nodesInfo,omitempty"`
}

// NodeDAOInfo is one node.
type NodeDAOInfo struct {
	NodeID             string                      `json:"nodeID"`
	HostName           string                      `json:"hostName,omitempty"`
	RackName           string                      `json:"rackName,omitempty"`
	Attributes         map[string]string           `json:"attributes,omitempty"`
	Capacity           map[string]int64            `json:"capacity,omitempty"`
	Allocated          map[string]int64            `json:"allocated,omitempty"`
	Occupied           map[string]int64            `json:"occupied,omitempty"`
	Available          map[string]int64            `json:"available,omitempty"`
	Utilized           map[string]int64            `json:"utilized,omitempty"`
	Allocations        []*AllocationDAOInfo        `json:"allocations,omitempty"`
	ForeignAllocations []*ForeignAllocationDAOInfo `json:"foreignAllocations,omitempty"`
	Schedulable        bool                        `json:"schedulable"`
	IsReserved         bool                        `json:"isReserved"`
	Reservations       []string                    `json:"reservations,omitempty"`
}

// PartitionNodesUtilDAOInfo is one element of
// /ws/v1/scheduler/node-utilizations.
type PartitionNodesUtilDAOInfo struct {
	ClusterID     string              `json:"clusterId"`
	Partition     string              `json:"partition"`
	NodesUtilList []*NodesUtilDAOInfo `json:"utilizations,omitempty"`
}

// NodesUtilDAOInfo is the node utilisation buckets of one resource type.
type NodesUtilDAOInfo struct {
	ResourceType string             `json:"type,omitempty"`
	NodesUtil    []*NodeUtilDAOInfo `json:"utilization,omitempty"`
}

// NodeUtilDAOInfo is one ten-percent bucket.
type NodeUtilDAOInfo struct {
	BucketName string   `json:"bucketName,omitempty"`
	NumOfNodes int64    `json:"numOfNodes,omitempty"`
	NodeNames  []string `json:"nodeNames,omitempty"`
}

// ClusterDAOInfo is one element of /ws/v1/clusters.
type ClusterDAOInfo struct {
	StartTime          int64               `json:"startTime,omitempty"`
	RMBuildInformation []map[string]string `json:"rmBuildInformation,omitempty"`
	PartitionName      string              `json:"partition"`
	ClusterName        string              `json:"clusterName"`
}

// ClusterUtilDAOInfo is the use of one resource type of a cluster.
type ClusterUtilDAOInfo struct {
	ResourceType string `json:"type,omitempty"`
	Total        int64  `json:"total,omitempty"`
	Used         int64  `json:"used,omitempty"`
	Usage        string `json:"usage,omitempty"`
}

// ApplicationHistoryDAOInfo is one sample of /ws/v1/history/apps.
type ApplicationHistoryDAOInfo struct {
	Timestamp         int64  `json:"timestamp,omitempty"`
	TotalApplications string `json:"totalApplications,omitempty"`
}

// ContainerHistoryDAOInfo is one sample of /ws/v1/history/containers.
type ContainerHistoryDAOInfo struct {
	Timestamp       int64  `json:"timestamp,omitempty"`
	TotalContainers string `json:"totalContainers,omitempty"`
}

// RuleDAOInfo is the placement rules of one partition.
type RuleDAOInfo struct {
	Partition string     `json:"partition"`
	Rules     []*RuleDAO `json:"rules,omitempty"`
}

// RuleDAO is one placement rule.
type RuleDAO struct {
	Name       string            `json:"name"`
	Parameters map[string]string `json:"parameters,omitempty"`
	Filter     *FilterDAO        `json:"filter,omitempty"`
	ParentRule *RuleDAO          `json:"parentRule,omitempty"`
}

// FilterDAO is a placement rule's user and group filter.
type FilterDAO struct {
	Type      string   `json:"type"`
	UserList  []string `json:"userList,omitempty"`
	GroupList []string `json:"groupList,omitempty"`
	UserExp   string   `json:"userExp,omitempty"`
	GroupExp  string   `json:"groupExp,omitempty"`
}

// SchedulerHealthDAOInfo is /ws/v1/scheduler/healthcheck.
type SchedulerHealthDAOInfo struct {
	Healthy      bool
	HealthChecks []HealthCheckInfo `json:",omitempty"`
}

// HealthCheckInfo is one check's result.
type HealthCheckInfo struct {
	Name             string `json:",omitempty"`
	Succeeded        bool
	Description      string `json:",omitempty"`
	DiagnosisMessage string `json:",omitempty"`
}

// UserResourceUsageDAOInfo is one user of /partition/{p}/usage/users.
type UserResourceUsageDAOInfo struct {
	UserName string                `json:"userName"`
	Groups   map[string]string     `json:"groups,omitempty"`
	Queues   *ResourceUsageDAOInfo `json:"queues,omitempty"`
}

// GroupResourceUsageDAOInfo is one group of /partition/{p}/usage/groups.
type GroupResourceUsageDAOInfo struct {
	GroupName    string                `json:"groupName"`
	Applications []string              `json:"applications,omitempty"`
	Queues       *ResourceUsageDAOInfo `json:"queues,omitempty"`
}

// ResourceUsageDAOInfo is a user's or group's use at a queue and below.
type ResourceUsageDAOInfo struct {
	QueuePath           string                  `json:"queuePath"`
	ResourceUsage       map[string]int64        `json:"resourceUsage,omitempty"`
	RunningApplications []string                `json:"runningApplications,omitempty"`
	MaxResources        map[string]int64        `json:"maxResources,omitempty"`
	MaxApplications     uint64                  `json:"maxApplications,omitempty"`
	Children            []*ResourceUsageDAOInfo `json:"children,omitempty"`
}

// YAPIError is the body of every error answer.
type YAPIError struct {
	StatusCode  int    `json:"status_code"`
	Message     string `json:"message,omitempty"`
	Description string `json:"description,omitempty"`
}

// NewYAPIError is the error body of statusCode with message; err, when
// given, is appended to the description.
func NewYAPIError(err error, statusCode int, message string) *YAPIError {
	description := message
	if err != nil {
		description = message + ". Original Cause :" + err.Error()
	}
	return &YAPIError{StatusCode: statusCode, Message: message, Description: description}
}

// YunikornID is the first line of /ws/v1/events/stream.
type YunikornID struct {
	InstanceUUID string
}
