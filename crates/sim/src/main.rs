//! `sicore-sim`: a simulated resource manager that drives the scheduler
//! through the same `extern "C"` functions a C resource manager uses, with
//! its own callback table, and reports what the scheduler did.
//!
//! With no arguments it runs the built-in workload on the embedded default
//! configuration: 100 nodes, 4 applications in 3 queues, 10,000 asks.
//! `--html FILE` also writes a visual report of the run (see `report.rs`);
//! `--serve ADDR` keeps the scheduler and its REST service up afterwards.
//! `--edition v1` runs the same workload through the SI v1.x family
//! (`sicore_v1_*`) instead of v0.12 (see docs/simulator.md).

mod cli;
mod default_run;
mod gang;
mod html;
mod preempt;
mod report;
mod rm;
mod serve;
mod shapes;
mod tenants;
mod workload;

use clap::Parser;

use cli::{Args, Edition, Workload};

fn main() {
    let args = Args::parse();
    if args.gang && args.html.is_some() {
        eprintln!("sicore-sim: --html does not apply to --gang");
        std::process::exit(2);
    }
    if args.gang && args.edition != Edition::V012 {
        // gang.rs builds v0.12 task groups and placeholder replacement
        // through the v0.12 family; running it here would not be v1.
        eprintln!(
            "sicore-sim: --gang runs over SI v0.12 only; --edition {} is not supported for it",
            match args.edition {
                Edition::V012 => "v0.12",
                Edition::V1 => "v1",
            }
        );
        std::process::exit(2);
    }
    if args.workload != Workload::Default && args.gang {
        eprintln!(
            "sicore-sim: --gang is a workload of its own; it does not combine with --workload"
        );
        std::process::exit(2);
    }
    let result = if args.workload == Workload::Tenants {
        tenants::run(&args)
    } else if args.workload == Workload::Preemption {
        preempt::run(&args)
    } else if args.gang {
        gang::run(gang::GangArgs {
            apps: args.gang_apps,
            members: args.gang_members,
            nodes: args.gang_nodes,
            predicates: args.predicates,
            stall_seconds: args.stall_seconds,
        })
    } else {
        default_run::run(args)
    };
    if let Err(e) = result {
        eprintln!("sicore-sim: {e}");
        std::process::exit(1);
    }
}
