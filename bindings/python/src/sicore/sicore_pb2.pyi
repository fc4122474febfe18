from . import si_pb2 as _si_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SchedulerOptions(_message.Message):
    __slots__ = ("config_dir", "policy_configs", "scheduling_interval_ms", "event_flush_interval_ms", "log_level", "reservation_delay_ms", "disable_reservation", "app_start_timeout_ms", "app_completing_timeout_ms", "app_terminated_timeout_ms", "disable_events", "outstanding_check_interval_ms", "event_types", "placeholder_timeout_ms", "rest_address", "rest", "max_asks_per_rm", "queue_cleaner_interval_ms")
    class PolicyConfigsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONFIG_DIR_FIELD_NUMBER: _ClassVar[int]
    POLICY_CONFIGS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    EVENT_FLUSH_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    LOG_LEVEL_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    DISABLE_RESERVATION_FIELD_NUMBER: _ClassVar[int]
    APP_START_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    APP_COMPLETING_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    APP_TERMINATED_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    DISABLE_EVENTS_FIELD_NUMBER: _ClassVar[int]
    OUTSTANDING_CHECK_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPES_FIELD_NUMBER: _ClassVar[int]
    PLACEHOLDER_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    REST_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    REST_FIELD_NUMBER: _ClassVar[int]
    MAX_ASKS_PER_RM_FIELD_NUMBER: _ClassVar[int]
    QUEUE_CLEANER_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    config_dir: str
    policy_configs: _containers.ScalarMap[str, str]
    scheduling_interval_ms: int
    event_flush_interval_ms: int
    log_level: str
    reservation_delay_ms: int
    disable_reservation: bool
    app_start_timeout_ms: int
    app_completing_timeout_ms: int
    app_terminated_timeout_ms: int
    disable_events: bool
    outstanding_check_interval_ms: int
    event_types: _containers.RepeatedScalarFieldContainer[str]
    placeholder_timeout_ms: int
    rest_address: str
    rest: RestOptions
    max_asks_per_rm: int
    queue_cleaner_interval_ms: int
    def __init__(self, config_dir: _Optional[str] = ..., policy_configs: _Optional[_Mapping[str, str]] = ..., scheduling_interval_ms: _Optional[int] = ..., event_flush_interval_ms: _Optional[int] = ..., log_level: _Optional[str] = ..., reservation_delay_ms: _Optional[int] = ..., disable_reservation: bool = ..., app_start_timeout_ms: _Optional[int] = ..., app_completing_timeout_ms: _Optional[int] = ..., app_terminated_timeout_ms: _Optional[int] = ..., disable_events: bool = ..., outstanding_check_interval_ms: _Optional[int] = ..., event_types: _Optional[_Iterable[str]] = ..., placeholder_timeout_ms: _Optional[int] = ..., rest_address: _Optional[str] = ..., rest: _Optional[_Union[RestOptions, _Mapping]] = ..., max_asks_per_rm: _Optional[int] = ..., queue_cleaner_interval_ms: _Optional[int] = ...) -> None: ...

class RestOptions(_message.Message):
    __slots__ = ("token", "allowed_hosts", "header_timeout_ms", "body_timeout_ms", "connection_timeout_ms", "max_connections", "max_connections_per_peer")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_HOSTS_FIELD_NUMBER: _ClassVar[int]
    HEADER_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    BODY_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    CONNECTION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_CONNECTIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_CONNECTIONS_PER_PEER_FIELD_NUMBER: _ClassVar[int]
    token: str
    allowed_hosts: _containers.RepeatedScalarFieldContainer[str]
    header_timeout_ms: int
    body_timeout_ms: int
    connection_timeout_ms: int
    max_connections: int
    max_connections_per_peer: int
    def __init__(self, token: _Optional[str] = ..., allowed_hosts: _Optional[_Iterable[str]] = ..., header_timeout_ms: _Optional[int] = ..., body_timeout_ms: _Optional[int] = ..., connection_timeout_ms: _Optional[int] = ..., max_connections: _Optional[int] = ..., max_connections_per_peer: _Optional[int] = ...) -> None: ...

class EventRecords(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[_si_pb2.EventRecord]
    def __init__(self, events: _Optional[_Iterable[_Union[_si_pb2.EventRecord, _Mapping]]] = ...) -> None: ...
