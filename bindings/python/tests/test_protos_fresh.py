"""The committed si_pb2/sicore_pb2 of both editions must describe exactly what the protos say.

SI v0.12: ``sicore.si_pb2``/``sicore.sicore_pb2`` from ``proto/*.proto``;
SI v1.x: ``sicore.v1.si_pb2``/``sicore.v1.sicore_pb2`` from ``proto/si18/*.proto``.

Compares descriptors, not generated text, so any grpcio-tools version can
check freshness. Regenerate with ``tools/generate_protos.py`` when this fails.
"""

from __future__ import annotations

import importlib.resources
import tempfile
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

import sicore.v1
from sicore import si_pb2, sicore_pb2

PROTO_DIR = Path(__file__).resolve().parents[3] / "proto"


def _normalized(file: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    """Drop what protoc leaves out of generated Python code (json_name)."""
    file = descriptor_pb2.FileDescriptorProto.FromString(file.SerializeToString())

    def strip(messages: object) -> None:
        for message in messages:  # type: ignore[attr-defined]
            for f in (*message.field, *message.extension):
                f.ClearField("json_name")
            strip(message.nested_type)

    strip(file.message_type)
    for ext in file.extension:
        ext.ClearField("json_name")
    return file


EDITIONS = [
    pytest.param(PROTO_DIR, (si_pb2, sicore_pb2), id="v0.12"),
    pytest.param(PROTO_DIR / "si18", (sicore.v1.si_pb2, sicore.v1.sicore_pb2), id="v1.8"),
]


@pytest.mark.skipif(not (PROTO_DIR / "si.proto").is_file(), reason="not in a checkout with proto/")
@pytest.mark.parametrize(("proto_dir", "modules"), EDITIONS)
def test_generated_modules_match_the_protos(proto_dir: Path, modules: tuple[object, ...]) -> None:
    protoc = pytest.importorskip("grpc_tools.protoc")
    well_known = importlib.resources.files("grpc_tools") / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "set.pb"
        rc = protoc.main(["protoc", f"-I{proto_dir}", f"-I{well_known}",
                          f"--descriptor_set_out={out}", "si.proto", "sicore.proto"])
        assert rc == 0, f"protoc failed on {proto_dir}/*.proto"
        fresh = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    by_name = {f.name: f for f in fresh.file}
    for module in modules:
        committed = descriptor_pb2.FileDescriptorProto.FromString(
            module.DESCRIPTOR.serialized_pb)  # type: ignore[attr-defined]
        assert _normalized(committed) == _normalized(by_name[committed.name]), (
            f"{module.__name__} is stale: run bindings/python/tools/generate_protos.py")  # type: ignore[attr-defined]


def test_the_v1_modules_register_in_the_private_pool_only() -> None:
    # What tools/generate_protos.py rewrites; a regeneration without it
    # would make importing both editions fail.
    for module in (sicore.v1.si_pb2, sicore.v1.sicore_pb2):
        source = Path(module.__file__).read_text()
        assert "_descriptor_pool.Default()" not in source
        assert "_pool.POOL.AddSerializedFile(" in source
