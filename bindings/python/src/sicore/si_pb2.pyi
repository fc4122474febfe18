from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TerminationType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNKNOWN_TERMINATION_TYPE: _ClassVar[TerminationType]
    STOPPED_BY_RM: _ClassVar[TerminationType]
    TIMEOUT: _ClassVar[TerminationType]
    PREEMPTED_BY_SCHEDULER: _ClassVar[TerminationType]
    PLACEHOLDER_REPLACED: _ClassVar[TerminationType]
UNKNOWN_TERMINATION_TYPE: TerminationType
STOPPED_BY_RM: TerminationType
TIMEOUT: TerminationType
PREEMPTED_BY_SCHEDULER: TerminationType
PLACEHOLDER_REPLACED: TerminationType
SI_SECRET_FIELD_NUMBER: _ClassVar[int]
si_secret: _descriptor.FieldDescriptor

class RegisterResourceManagerRequest(_message.Message):
    __slots__ = ("rmID", "version", "policyGroup")
    RMID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    POLICYGROUP_FIELD_NUMBER: _ClassVar[int]
    rmID: str
    version: str
    policyGroup: str
    def __init__(self, rmID: _Optional[str] = ..., version: _Optional[str] = ..., policyGroup: _Optional[str] = ...) -> None: ...

class RegisterResourceManagerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AllocationRequest(_message.Message):
    __slots__ = ("asks", "releases", "rmID")
    ASKS_FIELD_NUMBER: _ClassVar[int]
    RELEASES_FIELD_NUMBER: _ClassVar[int]
    RMID_FIELD_NUMBER: _ClassVar[int]
    asks: _containers.RepeatedCompositeFieldContainer[AllocationAsk]
    releases: AllocationReleasesRequest
    rmID: str
    def __init__(self, asks: _Optional[_Iterable[_Union[AllocationAsk, _Mapping]]] = ..., releases: _Optional[_Union[AllocationReleasesRequest, _Mapping]] = ..., rmID: _Optional[str] = ...) -> None: ...

class ApplicationRequest(_message.Message):
    __slots__ = ("new", "remove", "rmID")
    NEW_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    RMID_FIELD_NUMBER: _ClassVar[int]
    new: _containers.RepeatedCompositeFieldContainer[AddApplicationRequest]
    remove: _containers.RepeatedCompositeFieldContainer[RemoveApplicationRequest]
    rmID: str
    def __init__(self, new: _Optional[_Iterable[_Union[AddApplicationRequest, _Mapping]]] = ..., remove: _Optional[_Iterable[_Union[RemoveApplicationRequest, _Mapping]]] = ..., rmID: _Optional[str] = ...) -> None: ...

class NodeRequest(_message.Message):
    __slots__ = ("nodes", "rmID")
    NODES_FIELD_NUMBER: _ClassVar[int]
    RMID_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[NodeInfo]
    rmID: str
    def __init__(self, nodes: _Optional[_Iterable[_Union[NodeInfo, _Mapping]]] = ..., rmID: _Optional[str] = ...) -> None: ...

class AllocationResponse(_message.Message):
    __slots__ = ("new", "released", "releasedAsks", "rejected")
    NEW_FIELD_NUMBER: _ClassVar[int]
    RELEASED_FIELD_NUMBER: _ClassVar[int]
    RELEASEDASKS_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    new: _containers.RepeatedCompositeFieldContainer[Allocation]
    released: _containers.RepeatedCompositeFieldContainer[AllocationRelease]
    releasedAsks: _containers.RepeatedCompositeFieldContainer[AllocationAskRelease]
    rejected: _containers.RepeatedCompositeFieldContainer[RejectedAllocationAsk]
    def __init__(self, new: _Optional[_Iterable[_Union[Allocation, _Mapping]]] = ..., released: _Optional[_Iterable[_Union[AllocationRelease, _Mapping]]] = ..., releasedAsks: _Optional[_Iterable[_Union[AllocationAskRelease, _Mapping]]] = ..., rejected: _Optional[_Iterable[_Union[RejectedAllocationAsk, _Mapping]]] = ...) -> None: ...

class ApplicationResponse(_message.Message):
    __slots__ = ("rejected", "accepted", "updated")
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    rejected: _containers.RepeatedCompositeFieldContainer[RejectedApplication]
    accepted: _containers.RepeatedCompositeFieldContainer[AcceptedApplication]
    updated: _containers.RepeatedCompositeFieldContainer[UpdatedApplication]
    def __init__(self, rejected: _Optional[_Iterable[_Union[RejectedApplication, _Mapping]]] = ..., accepted: _Optional[_Iterable[_Union[AcceptedApplication, _Mapping]]] = ..., updated: _Optional[_Iterable[_Union[UpdatedApplication, _Mapping]]] = ...) -> None: ...

class NodeResponse(_message.Message):
    __slots__ = ("rejected", "accepted")
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    rejected: _containers.RepeatedCompositeFieldContainer[RejectedNode]
    accepted: _containers.RepeatedCompositeFieldContainer[AcceptedNode]
    def __init__(self, rejected: _Optional[_Iterable[_Union[RejectedNode, _Mapping]]] = ..., accepted: _Optional[_Iterable[_Union[AcceptedNode, _Mapping]]] = ...) -> None: ...

class UpdatedApplication(_message.Message):
    __slots__ = ("applicationID", "state", "stateTransitionTimestamp", "message")
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STATETRANSITIONTIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    applicationID: str
    state: str
    stateTransitionTimestamp: int
    message: str
    def __init__(self, applicationID: _Optional[str] = ..., state: _Optional[str] = ..., stateTransitionTimestamp: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class RejectedApplication(_message.Message):
    __slots__ = ("applicationID", "reason")
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    applicationID: str
    reason: str
    def __init__(self, applicationID: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class AcceptedApplication(_message.Message):
    __slots__ = ("applicationID",)
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    applicationID: str
    def __init__(self, applicationID: _Optional[str] = ...) -> None: ...

class RejectedNode(_message.Message):
    __slots__ = ("nodeID", "reason")
    NODEID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    nodeID: str
    reason: str
    def __init__(self, nodeID: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class AcceptedNode(_message.Message):
    __slots__ = ("nodeID",)
    NODEID_FIELD_NUMBER: _ClassVar[int]
    nodeID: str
    def __init__(self, nodeID: _Optional[str] = ...) -> None: ...

class Priority(_message.Message):
    __slots__ = ("priorityValue", "priorityClassName")
    PRIORITYVALUE_FIELD_NUMBER: _ClassVar[int]
    PRIORITYCLASSNAME_FIELD_NUMBER: _ClassVar[int]
    priorityValue: int
    priorityClassName: str
    def __init__(self, priorityValue: _Optional[int] = ..., priorityClassName: _Optional[str] = ...) -> None: ...

class Resource(_message.Message):
    __slots__ = ("resources",)
    class ResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Quantity
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Quantity, _Mapping]] = ...) -> None: ...
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.MessageMap[str, Quantity]
    def __init__(self, resources: _Optional[_Mapping[str, Quantity]] = ...) -> None: ...

class Quantity(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: int
    def __init__(self, value: _Optional[int] = ...) -> None: ...

class AllocationAsk(_message.Message):
    __slots__ = ("allocationKey", "applicationID", "partitionName", "resourceAsk", "maxAllocations", "priority", "executionTimeoutMilliSeconds", "tags", "taskGroupName", "placeholder")
    class TagsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ALLOCATIONKEY_FIELD_NUMBER: _ClassVar[int]
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONNAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCEASK_FIELD_NUMBER: _ClassVar[int]
    MAXALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    EXECUTIONTIMEOUTMILLISECONDS_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    TASKGROUPNAME_FIELD_NUMBER: _ClassVar[int]
    PLACEHOLDER_FIELD_NUMBER: _ClassVar[int]
    allocationKey: str
    applicationID: str
    partitionName: str
    resourceAsk: Resource
    maxAllocations: int
    priority: Priority
    executionTimeoutMilliSeconds: int
    tags: _containers.ScalarMap[str, str]
    taskGroupName: str
    placeholder: bool
    def __init__(self, allocationKey: _Optional[str] = ..., applicationID: _Optional[str] = ..., partitionName: _Optional[str] = ..., resourceAsk: _Optional[_Union[Resource, _Mapping]] = ..., maxAllocations: _Optional[int] = ..., priority: _Optional[_Union[Priority, _Mapping]] = ..., executionTimeoutMilliSeconds: _Optional[int] = ..., tags: _Optional[_Mapping[str, str]] = ..., taskGroupName: _Optional[str] = ..., placeholder: bool = ...) -> None: ...

class AddApplicationRequest(_message.Message):
    __slots__ = ("applicationID", "queueName", "partitionName", "ugi", "tags", "executionTimeoutMilliSeconds", "placeholderAsk", "gangSchedulingStyle")
    class TagsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    QUEUENAME_FIELD_NUMBER: _ClassVar[int]
    PARTITIONNAME_FIELD_NUMBER: _ClassVar[int]
    UGI_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    EXECUTIONTIMEOUTMILLISECONDS_FIELD_NUMBER: _ClassVar[int]
    PLACEHOLDERASK_FIELD_NUMBER: _ClassVar[int]
    GANGSCHEDULINGSTYLE_FIELD_NUMBER: _ClassVar[int]
    applicationID: str
    queueName: str
    partitionName: str
    ugi: UserGroupInformation
    tags: _containers.ScalarMap[str, str]
    executionTimeoutMilliSeconds: int
    placeholderAsk: Resource
    gangSchedulingStyle: str
    def __init__(self, applicationID: _Optional[str] = ..., queueName: _Optional[str] = ..., partitionName: _Optional[str] = ..., ugi: _Optional[_Union[UserGroupInformation, _Mapping]] = ..., tags: _Optional[_Mapping[str, str]] = ..., executionTimeoutMilliSeconds: _Optional[int] = ..., placeholderAsk: _Optional[_Union[Resource, _Mapping]] = ..., gangSchedulingStyle: _Optional[str] = ...) -> None: ...

class RemoveApplicationRequest(_message.Message):
    __slots__ = ("applicationID", "partitionName")
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONNAME_FIELD_NUMBER: _ClassVar[int]
    applicationID: str
    partitionName: str
    def __init__(self, applicationID: _Optional[str] = ..., partitionName: _Optional[str] = ...) -> None: ...

class UserGroupInformation(_message.Message):
    __slots__ = ("user", "groups")
    USER_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    user: str
    groups: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, user: _Optional[str] = ..., groups: _Optional[_Iterable[str]] = ...) -> None: ...

class Allocation(_message.Message):
    __slots__ = ("allocationKey", "allocationTags", "UUID", "resourcePerAlloc", "priority", "queueName", "nodeID", "applicationID", "partitionName", "taskGroupName", "placeholder")
    class AllocationTagsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ALLOCATIONKEY_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONTAGS_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    RESOURCEPERALLOC_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    QUEUENAME_FIELD_NUMBER: _ClassVar[int]
    NODEID_FIELD_NUMBER: _ClassVar[int]
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONNAME_FIELD_NUMBER: _ClassVar[int]
    TASKGROUPNAME_FIELD_NUMBER: _ClassVar[int]
    PLACEHOLDER_FIELD_NUMBER: _ClassVar[int]
    allocationKey: str
    allocationTags: _containers.ScalarMap[str, str]
    UUID: str
    resourcePerAlloc: Resource
    priority: Priority
    queueName: str
    nodeID: str
    applicationID: str
    partitionName: str
    taskGroupName: str
    placeholder: bool
    def __init__(self, allocationKey: _Optional[str] = ..., allocationTags: _Optional[_Mapping[str, str]] = ..., UUID: _Optional[str] = ..., resourcePerAlloc: _Optional[_Union[Resource, _Mapping]] = ..., priority: _Optional[_Union[Priority, _Mapping]] = ..., queueName: _Optional[str] = ..., nodeID: _Optional[str] = ..., applicationID: _Optional[str] = ..., partitionName: _Optional[str] = ..., taskGroupName: _Optional[str] = ..., placeholder: bool = ...) -> None: ...

class AllocationReleasesRequest(_message.Message):
    __slots__ = ("allocationsToRelease", "allocationAsksToRelease")
    ALLOCATIONSTORELEASE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONASKSTORELEASE_FIELD_NUMBER: _ClassVar[int]
    allocationsToRelease: _containers.RepeatedCompositeFieldContainer[AllocationRelease]
    allocationAsksToRelease: _containers.RepeatedCompositeFieldContainer[AllocationAskRelease]
    def __init__(self, allocationsToRelease: _Optional[_Iterable[_Union[AllocationRelease, _Mapping]]] = ..., allocationAsksToRelease: _Optional[_Iterable[_Union[AllocationAskRelease, _Mapping]]] = ...) -> None: ...

class AllocationRelease(_message.Message):
    __slots__ = ("partitionName", "applicationID", "UUID", "terminationType", "message")
    PARTITIONNAME_FIELD_NUMBER: _ClassVar[int]
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    TERMINATIONTYPE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    partitionName: str
    applicationID: str
    UUID: str
    terminationType: TerminationType
    message: str
    def __init__(self, partitionName: _Optional[str] = ..., applicationID: _Optional[str] = ..., UUID: _Optional[str] = ..., terminationType: _Optional[_Union[TerminationType, str]] = ..., message: _Optional[str] = ...) -> None: ...

class AllocationAskRelease(_message.Message):
    __slots__ = ("partitionName", "applicationID", "allocationkey", "terminationType", "message")
    PARTITIONNAME_FIELD_NUMBER: _ClassVar[int]
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONKEY_FIELD_NUMBER: _ClassVar[int]
    TERMINATIONTYPE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    partitionName: str
    applicationID: str
    allocationkey: str
    terminationType: TerminationType
    message: str
    def __init__(self, partitionName: _Optional[str] = ..., applicationID: _Optional[str] = ..., allocationkey: _Optional[str] = ..., terminationType: _Optional[_Union[TerminationType, str]] = ..., message: _Optional[str] = ...) -> None: ...

class NodeInfo(_message.Message):
    __slots__ = ("nodeID", "action", "attributes", "schedulableResource", "occupiedResource", "existingAllocations")
    class ActionFromRM(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN_ACTION_FROM_RM: _ClassVar[NodeInfo.ActionFromRM]
        CREATE: _ClassVar[NodeInfo.ActionFromRM]
        UPDATE: _ClassVar[NodeInfo.ActionFromRM]
        DRAIN_NODE: _ClassVar[NodeInfo.ActionFromRM]
        DECOMISSION: _ClassVar[NodeInfo.ActionFromRM]
        DRAIN_TO_SCHEDULABLE: _ClassVar[NodeInfo.ActionFromRM]
    UNKNOWN_ACTION_FROM_RM: NodeInfo.ActionFromRM
    CREATE: NodeInfo.ActionFromRM
    UPDATE: NodeInfo.ActionFromRM
    DRAIN_NODE: NodeInfo.ActionFromRM
    DECOMISSION: NodeInfo.ActionFromRM
    DRAIN_TO_SCHEDULABLE: NodeInfo.ActionFromRM
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NODEID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULABLERESOURCE_FIELD_NUMBER: _ClassVar[int]
    OCCUPIEDRESOURCE_FIELD_NUMBER: _ClassVar[int]
    EXISTINGALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    nodeID: str
    action: NodeInfo.ActionFromRM
    attributes: _containers.ScalarMap[str, str]
    schedulableResource: Resource
    occupiedResource: Resource
    existingAllocations: _containers.RepeatedCompositeFieldContainer[Allocation]
    def __init__(self, nodeID: _Optional[str] = ..., action: _Optional[_Union[NodeInfo.ActionFromRM, str]] = ..., attributes: _Optional[_Mapping[str, str]] = ..., schedulableResource: _Optional[_Union[Resource, _Mapping]] = ..., occupiedResource: _Optional[_Union[Resource, _Mapping]] = ..., existingAllocations: _Optional[_Iterable[_Union[Allocation, _Mapping]]] = ...) -> None: ...

class RejectedAllocationAsk(_message.Message):
    __slots__ = ("allocationKey", "applicationID", "reason")
    ALLOCATIONKEY_FIELD_NUMBER: _ClassVar[int]
    APPLICATIONID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    allocationKey: str
    applicationID: str
    reason: str
    def __init__(self, allocationKey: _Optional[str] = ..., applicationID: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class PredicatesArgs(_message.Message):
    __slots__ = ("allocationKey", "nodeID", "allocate")
    ALLOCATIONKEY_FIELD_NUMBER: _ClassVar[int]
    NODEID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATE_FIELD_NUMBER: _ClassVar[int]
    allocationKey: str
    nodeID: str
    allocate: bool
    def __init__(self, allocationKey: _Optional[str] = ..., nodeID: _Optional[str] = ..., allocate: bool = ...) -> None: ...

class ReSyncSchedulerCacheArgs(_message.Message):
    __slots__ = ("assumedAllocations", "forgetAllocations")
    ASSUMEDALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    FORGETALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    assumedAllocations: _containers.RepeatedCompositeFieldContainer[AssumedAllocation]
    forgetAllocations: _containers.RepeatedCompositeFieldContainer[ForgotAllocation]
    def __init__(self, assumedAllocations: _Optional[_Iterable[_Union[AssumedAllocation, _Mapping]]] = ..., forgetAllocations: _Optional[_Iterable[_Union[ForgotAllocation, _Mapping]]] = ...) -> None: ...

class AssumedAllocation(_message.Message):
    __slots__ = ("allocationKey", "nodeID")
    ALLOCATIONKEY_FIELD_NUMBER: _ClassVar[int]
    NODEID_FIELD_NUMBER: _ClassVar[int]
    allocationKey: str
    nodeID: str
    def __init__(self, allocationKey: _Optional[str] = ..., nodeID: _Optional[str] = ...) -> None: ...

class ForgotAllocation(_message.Message):
    __slots__ = ("allocationKey",)
    ALLOCATIONKEY_FIELD_NUMBER: _ClassVar[int]
    allocationKey: str
    def __init__(self, allocationKey: _Optional[str] = ...) -> None: ...

class UpdateContainerSchedulingStateRequest(_message.Message):
    __slots__ = ("applicartionID", "allocationKey", "state", "reason")
    class SchedulingState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN_SCHEDULING_STATE: _ClassVar[UpdateContainerSchedulingStateRequest.SchedulingState]
        SKIPPED: _ClassVar[UpdateContainerSchedulingStateRequest.SchedulingState]
        SCHEDULED: _ClassVar[UpdateContainerSchedulingStateRequest.SchedulingState]
        RESERVED: _ClassVar[UpdateContainerSchedulingStateRequest.SchedulingState]
        FAILED: _ClassVar[UpdateContainerSchedulingStateRequest.SchedulingState]
    UNKNOWN_SCHEDULING_STATE: UpdateContainerSchedulingStateRequest.SchedulingState
    SKIPPED: UpdateContainerSchedulingStateRequest.SchedulingState
    SCHEDULED: UpdateContainerSchedulingStateRequest.SchedulingState
    RESERVED: UpdateContainerSchedulingStateRequest.SchedulingState
    FAILED: UpdateContainerSchedulingStateRequest.SchedulingState
    APPLICARTIONID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONKEY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    applicartionID: str
    allocationKey: str
    state: UpdateContainerSchedulingStateRequest.SchedulingState
    reason: str
    def __init__(self, applicartionID: _Optional[str] = ..., allocationKey: _Optional[str] = ..., state: _Optional[_Union[UpdateContainerSchedulingStateRequest.SchedulingState, str]] = ..., reason: _Optional[str] = ...) -> None: ...

class UpdateConfigurationRequest(_message.Message):
    __slots__ = ("configs",)
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    configs: str
    def __init__(self, configs: _Optional[str] = ...) -> None: ...

class UpdateConfigurationResponse(_message.Message):
    __slots__ = ("success", "oldConfig", "reason")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    OLDCONFIG_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    success: bool
    oldConfig: str
    reason: str
    def __init__(self, success: bool = ..., oldConfig: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class EventRecord(_message.Message):
    __slots__ = ("type", "objectID", "groupID", "reason", "message", "timestampNano")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN_EVENTRECORD_TYPE: _ClassVar[EventRecord.Type]
        REQUEST: _ClassVar[EventRecord.Type]
        APP: _ClassVar[EventRecord.Type]
        NODE: _ClassVar[EventRecord.Type]
        QUEUE: _ClassVar[EventRecord.Type]
    UNKNOWN_EVENTRECORD_TYPE: EventRecord.Type
    REQUEST: EventRecord.Type
    APP: EventRecord.Type
    NODE: EventRecord.Type
    QUEUE: EventRecord.Type
    TYPE_FIELD_NUMBER: _ClassVar[int]
    OBJECTID_FIELD_NUMBER: _ClassVar[int]
    GROUPID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMPNANO_FIELD_NUMBER: _ClassVar[int]
    type: EventRecord.Type
    objectID: str
    groupID: str
    reason: str
    message: str
    timestampNano: int
    def __init__(self, type: _Optional[_Union[EventRecord.Type, str]] = ..., objectID: _Optional[str] = ..., groupID: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., timestampNano: _Optional[int] = ...) -> None: ...
