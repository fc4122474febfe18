"""Regenerate ``src/sicore/si_pb2.py`` and ``src/sicore/sicore_pb2.py`` (and stubs).

Run from anywhere, with ``grpcio-tools`` installed::

    pip install "grpcio-tools==1.62.3"
    python bindings/python/tools/generate_protos.py

The committed modules are produced by grpcio-tools 1.62.3 (protoc 25.1), whose
generated code runs on every ``protobuf`` runtime from 4.25 on (newer protoc
releases stamp a minimum runtime version into the code). Any grpcio-tools
version works for regeneration, but then raise the ``protobuf`` lower bound in
``pyproject.toml`` to the version printed in the generated header.

``tests/test_protos_fresh.py`` fails when the committed modules no longer
describe ``proto/*.proto``.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "src" / "sicore"
PROTO_DIR = HERE.parents[2] / "proto"
PROTOS = ("si.proto", "sicore.proto")


def main() -> int:
    """Compile the protos into the package, making the imports package-relative."""
    import importlib.resources

    from grpc_tools import protoc  # type: ignore[import-untyped]

    well_known = importlib.resources.files("grpc_tools") / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            "protoc",
            f"-I{PROTO_DIR}",
            f"-I{well_known}",
            f"--python_out={tmp}",
            f"--pyi_out={tmp}",
            *PROTOS,
        ]
        if protoc.main(args) != 0:
            print("protoc failed", file=sys.stderr)
            return 1
        for generated in sorted(Path(tmp).iterdir()):
            text = generated.read_text()
            # sicore.proto imports "si.proto": protoc writes a top-level
            # `import si_pb2`, which only works with the package dir on sys.path.
            text = re.sub(r"^import si_pb2 as", "from . import si_pb2 as", text, flags=re.M)
            text = re.sub(r"^import si_pb2$", "from . import si_pb2", text, flags=re.M)
            # Messages report the module they live in (pickling relies on it).
            module = generated.name.split(".")[0]
            text = text.replace(f"DESCRIPTOR, '{module}', _globals",
                                f"DESCRIPTOR, 'sicore.{module}', _globals")
            (PACKAGE / generated.name).write_text(text)
            print(f"wrote {PACKAGE / generated.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
