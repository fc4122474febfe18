//! The command line: the edition, the workload and every flag.

use std::path::PathBuf;

use clap::Parser;

/// The SI edition the simulated RM registers through.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Edition {
    /// SI v0.12: `sicore_*`, queues from the scheduler's options.
    #[value(name = "v0.12")]
    V012,
    /// SI v1.x: `sicore_v1_*`, queues in the registration's `config`, one
    /// request per allocation (v1 has no repeat count).
    #[value(name = "v1")]
    V1,
}

impl Edition {
    /// How the reports name the edition.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Edition::V012 => "SI v0.12",
            Edition::V1 => "SI v1.x",
        }
    }
}

/// The workload a run drives.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Workload {
    /// `--nodes` nodes, `--apps` applications over `--queues`, `--asks` asks.
    Default,
    /// Users and groups under `limits` at several queue levels, with mixed
    /// priorities; the reports check every tenant against its caps.
    Tenants,
    /// One queue fills the cluster, then a queue below its guarantee
    /// submits work and gets its share back by preemption.
    Preemption,
}

#[derive(Parser, Debug)]
#[command(
    version,
    about = "Simulated resource manager driving libsicore through its C ABI"
)]
pub(crate) struct Args {
    /// Number of nodes.
    #[arg(long, default_value_t = 100)]
    pub(crate) nodes: usize,
    /// Number of asks (each for one allocation).
    #[arg(long, default_value_t = 10_000)]
    pub(crate) asks: usize,
    /// Number of applications, spread over the queues.
    #[arg(long, default_value_t = 4)]
    pub(crate) apps: usize,
    /// Comma-separated queues the applications go to.
    #[arg(long, default_value = "root.team-a,root.team-b,root.batch")]
    pub(crate) queues: String,
    /// A queues.yaml to use instead of the embedded default.
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// Random seed for node sizes and ask shapes.
    #[arg(long, default_value_t = 42)]
    pub(crate) seed: u64,
    /// Install a Predicates callback (accepts every node) to include its cost.
    #[arg(long)]
    pub(crate) predicates: bool,
    /// Give up waiting when no allocation arrives for this many seconds.
    #[arg(long, default_value_t = 5)]
    pub(crate) stall_seconds: u64,
    /// Run the gang workload instead (gang.rs): placeholders first, then
    /// real asks that replace them; reports replacements per second.
    #[arg(long)]
    pub(crate) gang: bool,
    /// Gang workload: applications, one task group each.
    #[arg(long, default_value_t = 1000)]
    pub(crate) gang_apps: usize,
    /// Gang workload: members per task group.
    #[arg(long, default_value_t = 10)]
    pub(crate) gang_members: usize,
    /// Gang workload: nodes.
    #[arg(long, default_value_t = 5000)]
    pub(crate) gang_nodes: usize,
    /// Also write a self-contained HTML report (inline SVG, no network
    /// needed): allocations per second, queue usage against guaranteed and
    /// max, a node utilisation heat map and application states over time.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
    /// After the workload, keep the scheduler and its REST service on ADDR
    /// (host:port, e.g. 127.0.0.1:9080) up until Ctrl-C.
    #[arg(long, value_name = "ADDR")]
    pub(crate) serve: Option<String>,
    /// Bearer token that PUT requests to the --serve REST service must
    /// carry; beyond loopback, without one, changes are refused (see
    /// docs/rest-and-metrics.md).
    #[arg(long, value_name = "TOKEN", requires = "serve")]
    pub(crate) rest_token: Option<String>,
    /// A Host header value the --serve REST service accepts besides
    /// localhost and its address ("name", "name:port", "name:*",
    /// "*.domain"); repeatable (see docs/rest-and-metrics.md).
    #[arg(long, value_name = "HOST", requires = "serve")]
    pub(crate) rest_allowed_host: Vec<String>,
    /// The SI edition the RM speaks: v0.12 (`sicore_*`) or v1 (SI v1.x,
    /// `sicore_v1_*`). The gang workload needs v0.12.
    #[arg(long, value_enum, default_value = "v0.12")]
    pub(crate) edition: Edition,
    /// The workload: default (the flags above), tenants (user and group
    /// limits, mixed priorities) or preemption (a guaranteed queue takes
    /// its share back); see docs/simulator.md.
    #[arg(long, value_enum, default_value = "default")]
    pub(crate) workload: Workload,
}
