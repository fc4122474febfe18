package configs

// Names used in configurations: the root queue and default partition, the
// queue properties the scheduler reads, and the extraConfig keys of the
// RM's configmap with their defaults (docs/si-v1.md lists what sicore
// does with each).
const (
	RootQueue        = "root"
	DOT              = "."
	DotReplace       = "_dot_"
	DefaultPartition = "default"

	ApplicationSortPolicy                    = "application.sort.policy"
	ApplicationSortPriority                  = "application.sort.priority"
	ApplicationUnschedulableAsksBackoff      = "application.unschedasks.backoff"
	ApplicationUnschedulableAsksBackoffDelay = "application.unschedasks.backoff.delay"
	PriorityPolicy                           = "priority.policy"
	PriorityOffset                           = "priority.offset"
	PreemptionPolicy                         = "preemption.policy"
	PreemptionDelay                          = "preemption.delay"
	QuotaPreemptionDelay                     = "quota.preemption.delay"

	ApplicationSortPriorityEnabled  = "enabled"
	ApplicationSortPriorityDisabled = "disabled"
)

// The extraConfig keys and their defaults.
const (
	PrefixEvent  = "event."
	PrefixHealth = "health."

	HealthCheckInterval = PrefixHealth + "checkInterval"

	CMEventTrackingEnabled    = PrefixEvent + "trackingEnabled"
	CMEventRequestCapacity    = PrefixEvent + "requestCapacity"
	CMEventRingBufferCapacity = PrefixEvent + "ringBufferCapacity"
	CMMaxEventStreams         = PrefixEvent + "maxStreams"
	CMMaxEventStreamsPerHost  = PrefixEvent + "maxStreamsPerHost"
	CMRESTResponseSize        = PrefixEvent + "RESTResponseSize"

	DefaultEventTrackingEnabled    = true
	DefaultEventRequestCapacity    = 1000
	DefaultEventRingBufferCapacity = 100000
	DefaultMaxStreams              = uint64(100)
	DefaultMaxStreamsPerHost       = uint64(15)
	DefaultRESTResponseSize        = uint64(10000)
)
