"""Regenerate the protobuf modules of both SI editions (and their stubs).

SI v0.12 (``proto/*.proto``) becomes ``src/sicore/si_pb2.py`` and
``src/sicore/sicore_pb2.py``, in protobuf's default descriptor pool. SI v1.x
(``proto/si18/*.proto``) becomes ``src/sicore/v1/si_pb2.py`` and
``src/sicore/v1/sicore_pb2.py``, in the private pool of
``sicore.v1._pool``: both ``si.proto`` files declare package ``si.v1``
with the same file name and many of the same message names, and the default
pool refuses a second file of that name or symbol ("duplicate file name
si.proto"), so one process could not import both editions otherwise.

Run from anywhere, with ``grpcio-tools`` installed::

    pip install "grpcio-tools==1.62.3"
    python bindings/python/tools/generate_protos.py

The committed modules are produced by grpcio-tools 1.62.3 (protoc 25.1), whose
generated code runs on every ``protobuf`` runtime from 4.25 on (newer protoc
releases stamp a minimum runtime version into the code). Any grpcio-tools
version works for regeneration, but then raise the ``protobuf`` lower bound in
``pyproject.toml`` to the version printed in the generated header.

``tests/test_protos_fresh.py`` fails when the committed modules no longer
describe ``proto/*.proto`` and ``proto/si18/*.proto``.
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
# (proto include dir, package dir, module path prefix, private pool or None)
EDITIONS = (
    (PROTO_DIR, PACKAGE, "sicore", False),
    (PROTO_DIR / "si18", PACKAGE / "v1", "sicore.v1", True),
)

_DEFAULT_POOL = "_descriptor_pool.Default().AddSerializedFile("


def main() -> int:
    """Compile both editions into the package."""
    for proto_dir, package, prefix, private in EDITIONS:
        rc = _generate(proto_dir, package, prefix, private)
        if rc != 0:
            return rc
    return 0


def _generate(proto_dir: Path, package: Path, prefix: str, private: bool) -> int:
    """Compile one edition's protos, making the imports package-relative."""
    import importlib.resources

    from grpc_tools import protoc  # type: ignore[import-untyped]

    well_known = importlib.resources.files("grpc_tools") / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            "protoc",
            f"-I{proto_dir}",
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
                                f"DESCRIPTOR, '{prefix}.{module}', _globals")
            if private and generated.suffix == ".py":
                if _DEFAULT_POOL not in text:
                    print(f"{generated.name}: no default-pool registration to redirect",
                          file=sys.stderr)
                    return 1
                text = text.replace(_DEFAULT_POOL, "_pool.POOL.AddSerializedFile(")
                text = text.replace("# @@protoc_insertion_point(imports)\n",
                                    "# @@protoc_insertion_point(imports)\n"
                                    "from . import _pool\n", 1)
            (package / generated.name).write_text(text)
            print(f"wrote {package / generated.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
