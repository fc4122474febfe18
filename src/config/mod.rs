//! Configuration: the v0.12 `queues.yaml` schema, validation, checksum and loading.
