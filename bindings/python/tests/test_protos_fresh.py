"""The committed si_pb2/sicore_pb2 must describe exactly what proto/*.proto says.

Compares descriptors, not generated text, so any grpcio-tools version can
check freshness. Regenerate with ``tools/generate_protos.py`` when this fails.
"""

from __future__ import annotations

import importlib.resources
import tempfile
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

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


@pytest.mark.skipif(not (PROTO_DIR / "si.proto").is_file(), reason="not in a checkout with proto/")
def test_generated_modules_match_the_protos() -> None:
    protoc = pytest.importorskip("grpc_tools.protoc")
    well_known = importlib.resources.files("grpc_tools") / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "set.pb"
        rc = protoc.main(["protoc", f"-I{PROTO_DIR}", f"-I{well_known}",
                          f"--descriptor_set_out={out}", "si.proto", "sicore.proto"])
        assert rc == 0, "protoc failed on proto/*.proto"
        fresh = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    by_name = {f.name: f for f in fresh.file}
    for module in (si_pb2, sicore_pb2):
        committed = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
        assert _normalized(committed) == _normalized(by_name[committed.name]), (
            f"{module.__name__} is stale: run bindings/python/tools/generate_protos.py")
