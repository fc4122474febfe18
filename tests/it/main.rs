//! The integration tests, one module per area, in one test binary: the
//! library is linked once, not once per file. `common` is the RM over the
//! C ABI that most modules drive (with its v1 edition, the dump's books and
//! random RMs on the Rust API), `restkit` the raw HTTP client and the
//! configuration RM of the REST tests. The memory tests, which install
//! their own global allocator, are the other binary (`tests/memory`).
//!
//! Run one module with `cargo test --test it MODULE::` (docs/testing.md).

mod common;
mod restkit;

mod allocation_batches;
mod bad_input;
mod callback_table;
mod concurrency;
mod config_api;
mod config_quantities;
mod config_watch;
mod deep_queues;
mod events_flush;
mod gang;
mod gang_creation_time_v1;
mod gang_limits;
mod header_fresh;
mod hostile_rm;
mod interner;
mod invariants;
mod layers;
mod lifecycle_apps;
mod limits_enforce;
mod limits_hardening;
mod limits_reload;
mod limits_v1;
mod logger_reentry;
mod metrics_labels;
mod minted_uuids;
mod node_capacity_v1;
mod nodes_actions;
mod outstanding_bounded;
mod placement_api;
mod policy_group_names;
mod preemption_guarantee;
mod preemption_quota;
mod preemption_required;
mod preemption_scenarios;
mod preemption_v19;
mod priority_ordering;
mod priority_warnings;
mod queues_api;
mod quota_v19;
mod reference_details;
mod reference_gaps;
mod release_owner;
mod rest_access;
mod rest_api;
mod rest_build_info;
mod rest_config_txn;
mod rest_dump_polling;
mod rest_events;
mod rest_hostile;
mod rest_partitions;
mod rest_v1_shapes;
mod resync_predicates;
mod rust_api;
mod scenario;
mod scenarios_v19;
mod scheduling_policy;
mod threads;
mod trace;
mod usergroup_events_v1;
mod v1_edge;
mod v1_extra_config;
mod v1_golden;
mod v1_order;
mod v1_preemption;
mod v1_rust_api;
mod why_pending;
mod why_pending_held;
