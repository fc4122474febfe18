"""The private descriptor pool of the SI v1.x messages.

Both editions' ``si.proto`` declare package ``si.v1`` under the same file
name, with many of the same message names (``si.v1.AllocationRequest``...).
protobuf's default pool holds one file per name and one descriptor per
full name, and refuses a second (``duplicate file name si.proto``), so the
v1.8 modules (``sicore.v1.si_pb2``, ``sicore.v1.sicore_pb2``) register into
this pool instead: ``tools/generate_protos.py`` rewrites their
``Default().AddSerializedFile`` to ``POOL.AddSerializedFile``. Messages of
the two editions are then distinct classes with distinct descriptors, and
a process may use both.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool

__all__ = ["POOL"]

POOL = descriptor_pool.DescriptorPool()
"""The pool of ``proto/si18``'s files (and ``descriptor.proto``, which ``si.proto`` imports)."""

# si.proto extends google.protobuf.FieldOptions (si_secret): a new pool
# starts empty, so it needs its own copy of descriptor.proto.
POOL.AddSerializedFile(descriptor_pb2.DESCRIPTOR.serialized_pb)
