"""Every failure surfaces as a SicoreError subclass with the library's status and message."""

from __future__ import annotations

import pytest
from conftest import RecordingRM, app_request, ask_request, node_request, register_request

import sicore
from sicore import Status, si_pb2

BAD_YAML = "partitions: [this is: not: valid yaml"


def test_unknown_rm_id_is_rejected(scheduler: sicore.Scheduler) -> None:
    for call, request in (
        (scheduler.update_allocation, ask_request("app", "k", rm_id="nobody")),
        (scheduler.update_application, app_request("app", rm_id="nobody")),
        (scheduler.update_node, node_request("n", rm_id="nobody")),
    ):
        with pytest.raises(sicore.RejectedError) as info:
            call(request)
        assert info.value.status is Status.REJECTED
        assert "nobody" in info.value.message


def test_update_configuration_of_unknown_rm_is_rejected(scheduler: sicore.Scheduler) -> None:
    with pytest.raises(sicore.RejectedError) as info:
        scheduler.update_configuration("nobody")
    assert "nobody" in info.value.message


def test_invalid_yaml_config_is_rejected_at_registration(rm: RecordingRM) -> None:
    with sicore.Scheduler(policy_configs={"queues": BAD_YAML}) as sched:
        with pytest.raises(sicore.RejectedError) as info:
            sched.register_resource_manager(register_request(), rm)
        assert info.value.status is Status.REJECTED
        assert info.value.message
        # The failed registration leaves the RM unregistered.
        with pytest.raises(sicore.RejectedError):
            sched.update_node(node_request("n"))


GOOD_YAML = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: fixed
    placementrules:
      - name: provided
        create: false
"""


def test_config_dir_file_and_update_configuration(tmp_path, rm: RecordingRM) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "custom.yaml").write_text(GOOD_YAML)
    with sicore.Scheduler(config_dir=tmp_path) as sched:
        sched.register_resource_manager(register_request(policy_group="custom"), rm)
        dump = sched.state_dump()
        (part,) = [p for p in dump["partitions"] if p["name"] == "default"]
        assert [c["path"] for c in part["root"]["children"]] == ["root.fixed"]

        # Re-reading an unchanged valid file succeeds.
        sched.update_configuration("rm-test")

        # An invalid file is refused and the old configuration stays in force.
        (tmp_path / "custom.yaml").write_text(BAD_YAML)
        with pytest.raises(sicore.RejectedError) as info:
            sched.update_configuration("rm-test")
        assert info.value.message
        dump = sched.state_dump()
        (part,) = [p for p in dump["partitions"] if p["name"] == "default"]
        assert [c["path"] for c in part["root"]["children"]] == ["root.fixed"]


def test_garbage_bytes_raise_decode_error(scheduler: sicore.Scheduler) -> None:
    garbage = b"\xff\xff\xff\xff\xff"
    for call in (scheduler.raw.update_allocation, scheduler.raw.update_application,
                 scheduler.raw.update_node):
        with pytest.raises(sicore.DecodeError) as info:
            call(garbage)
        assert info.value.status is Status.DECODE_ERROR
        assert info.value.message
    with pytest.raises(sicore.DecodeError):
        scheduler.raw.register_resource_manager(garbage, RecordingRM())


def test_garbage_options_raise_decode_error() -> None:
    lib = sicore.load_library()
    import ctypes

    from sicore._native import sicore_buffer

    out = ctypes.c_void_p()
    err = sicore_buffer()
    garbage = b"\xff\xff\xff"
    status = lib.sicore_new(garbage, len(garbage), ctypes.byref(out), ctypes.byref(err))
    with pytest.raises(sicore.DecodeError):
        lib.check(status, err, "sicore_new")
    assert not out.value


def test_non_utf8_cluster_id_is_an_invalid_argument(scheduler: sicore.Scheduler) -> None:
    with pytest.raises(sicore.InvalidArgumentError) as info:
        scheduler.raw.update_configuration(b"\xff\xfe")
    assert info.value.status is Status.INVALID_ARGUMENT


def test_raw_layer_round_trip(scheduler: sicore.Scheduler, rm: RecordingRM) -> None:
    answer = scheduler.raw.register_resource_manager(register_request().SerializeToString(), rm)
    si_pb2.RegisterResourceManagerResponse.FromString(answer)
    scheduler.raw.update_node(node_request("raw-node").SerializeToString())
    rm.wait_for(lambda: "raw-node" in rm.accepted_nodes())
    assert b"raw-node" in scheduler.raw.state_dump()


def test_wrong_message_type_is_a_type_error(scheduler: sicore.Scheduler) -> None:
    with pytest.raises(TypeError):
        scheduler.update_node(app_request("x"))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        scheduler.register_resource_manager(register_request(), object())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        scheduler.update_configuration(b"rm")  # type: ignore[arg-type]


def test_unknown_option_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="no_such_option"):
        sicore.Scheduler(no_such_option=1)


def test_invalid_log_level_is_refused() -> None:
    with pytest.raises(sicore.InvalidArgumentError) as info:
        sicore.Scheduler(log_level="loud")
    assert "loud" in info.value.message


def test_error_classes_match_statuses() -> None:
    from sicore._errors import error_for_status

    expected = {
        Status.INVALID_ARGUMENT: sicore.InvalidArgumentError,
        Status.DECODE_ERROR: sicore.DecodeError,
        Status.REJECTED: sicore.RejectedError,
        Status.STOPPED: sicore.StoppedError,
        Status.WOULD_DEADLOCK: sicore.WouldDeadlockError,
        Status.INTERNAL: sicore.InternalError,
    }
    for status, cls in expected.items():
        err = error_for_status(int(status), "why")
        assert type(err) is cls
        assert isinstance(err, sicore.SicoreError)
        assert err.status is status
        assert err.message == "why"
        assert "why" in str(err)
    unknown = error_for_status(99, "odd")
    assert isinstance(unknown, sicore.InternalError)
    assert unknown.status == 99
