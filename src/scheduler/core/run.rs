//! The core thread's loop and the core's timers.
//!
//! The loop only waits, batches commands and hands the outbox to the
//! dispatcher; every decision is one of the [`Core`] steps, so a test
//! stepping the core sees exactly what the thread would do.

use std::cmp::Reverse;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::{Command, Core};
use crate::proto::si::v1 as si;
use crate::scheduler::observe::{HISTORY_INTERVAL, REFRESH_INTERVAL};
use crate::scheduler::order::Posted;
use crate::scheduler::outcome::Outbound;
use crate::scheduler::partition::{OUTSTANDING_REASON, OUTSTANDING_REPORT_BUDGET};
use crate::scheduler::port::RmPort;

/// Most commands taken from the inbox before the core looks at timers and
/// runs a pass.
const BATCH: usize = 1024;

/// Runs `core` until `Shutdown` or until every sender is gone, handing
/// what it produces to the RMs' orders after every step and waking the
/// dispatcher for each (`scheduler::order`).
pub fn run(mut core: Core, inbox: Receiver<Command>, outbox: Sender<Posted>) {
    core.set_dispatcher(outbox.clone());
    let send = |core: &mut Core| {
        core.post_outbound(|p| {
            let _ = outbox.send(p);
        })
    };
    let mut work = false;
    loop {
        let wait = if work {
            Duration::ZERO
        } else {
            core.idle_wait()
        };
        let first = match inbox.recv_timeout(wait) {
            Ok(cmd) => Some(cmd),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let mut batch: Vec<Command> = first.into_iter().collect();
        batch.extend(inbox.try_iter().take(BATCH));
        let had_requests = !batch.is_empty();
        for cmd in batch {
            if matches!(cmd, Command::Shutdown) {
                return;
            }
            core.step(cmd);
            send(&mut core);
        }
        core.tick();
        send(&mut core);
        let mut made = 0;
        if had_requests || work || core.has_pending() || core.quota_due() {
            made = core.schedule_pass();
            send(&mut core);
        }
        work = made > 0;
    }
}

impl Core {
    /// How long the loop may wait for a command before a timer, a periodic
    /// job or a retry of pending asks is due.
    pub fn idle_wait(&self) -> Duration {
        let now = self.clock.now();
        let next_timer = self
            .timers
            .peek()
            .map(|Reverse((at, _))| at.saturating_duration_since(now));
        let idle = if self.has_pending() {
            self.options.scheduling_interval
        } else {
            Duration::from_secs(3600)
        };
        let periodic = self.next_periodic().saturating_duration_since(now);
        let quota = self
            .quota_wake()
            .map_or(idle, |at| at.saturating_duration_since(now));
        next_timer
            .map_or(idle, |t| t.min(idle))
            .min(periodic)
            .min(quota)
    }

    /// The earliest start of a quota-change preemption (partition/preempt/quota.rs)
    /// over the partitions: the loop wakes up for it even when nothing is
    /// pending.
    fn quota_wake(&self) -> Option<std::time::Instant> {
        self.partitions
            .values()
            .filter_map(|p| p.quota_wake())
            .min()
    }

    /// Whether a quota-change preemption is due now.
    pub fn quota_due(&self) -> bool {
        self.quota_wake().is_some_and(|at| at <= self.clock.now())
    }

    /// When the next periodic job (event flush, outstanding check, queue
    /// cleaner) is due.
    fn next_periodic(&self) -> Instant {
        let next = self
            .next_outstanding_check
            .min(self.next_metrics_refresh)
            .min(self.next_queue_clean);
        if self.events.is_empty() {
            next
        } else {
            next.min(self.next_event_flush)
        }
    }

    /// The outstanding-request check (spec 8.12), the queue cleaner (spec
    /// 3.7), the event flush (spec 13.1) and the metrics refresh, each at
    /// its own cadence.
    pub(super) fn periodic(&mut self) {
        let now = self.clock.now();
        if now >= self.next_outstanding_check {
            self.next_outstanding_check = now + self.options.outstanding_check_interval;
            self.report_outstanding();
        }
        if now >= self.next_queue_clean {
            self.next_queue_clean = now + self.options.queue_cleaner_interval;
            for p in self.partitions.values_mut() {
                p.clean_queues();
            }
        }
        if now >= self.next_event_flush {
            self.next_event_flush = now + self.options.event_flush_interval;
            self.flush_events();
        }
        if now >= self.next_metrics_refresh {
            self.next_metrics_refresh = now + REFRESH_INTERVAL;
            let history = now >= self.next_history_sample;
            if history {
                self.next_history_sample = now + HISTORY_INTERVAL;
            }
            let stamp = history.then(|| self.clock.unix_nanos());
            self.metrics
                .refresh(&self.partitions, self.event_stats(), stamp);
        }
    }

    /// Sends `FAILED` for the asks passes tried and could not place since
    /// the last check (spec 8.12), at most [`OUTSTANDING_REPORT_BUDGET`]
    /// per partition: the check costs what the passes noted, never a walk
    /// over every waiting ask.
    fn report_outstanding(&mut self) {
        for p in self.partitions.values_mut() {
            let Some(rm) = self.rms.get(p.rm_id()) else {
                continue;
            };
            if !rm.callback.has_container_state() {
                continue; // nobody to tell
            }
            for (app, key) in p.outstanding_requests(OUTSTANDING_REPORT_BUDGET) {
                let req = si::UpdateContainerSchedulingStateRequest {
                    applicartion_id: app.to_string(),
                    allocation_key: key.to_string(),
                    state: si::update_container_scheduling_state_request::SchedulingState::Failed
                        as i32,
                    reason: OUTSTANDING_REASON.to_string(),
                };
                self.outbox
                    .push(Outbound::ContainerState(rm.callback.key(), req));
            }
        }
    }

    /// Hands each RM everything its store collected, as one batch.
    fn flush_events(&mut self) {
        let now = self.clock.now();
        for (rm_id, store) in &mut self.events {
            let Some(rm) = self.rms.get(rm_id) else {
                continue;
            };
            let batch = store.take_batch(now);
            if !batch.is_empty() {
                self.outbox.push(Outbound::Events(rm.callback.key(), batch));
            }
        }
    }

    /// Fires the application timers that are due.
    pub(super) fn fire_timers(&mut self) {
        let now = self.clock.now();
        while let Some(Reverse((at, seq))) = self.timers.peek().copied() {
            if at > now {
                break;
            }
            self.timers.pop();
            let Some(t) = self.timer_data.remove(&seq) else {
                continue;
            };
            if let Some(p) = self.partitions.get_mut(&t.partition) {
                if !self.touched.contains(p.rm_id()) {
                    self.touched.insert(p.rm_id().to_string());
                }
                let out = self.outcomes.entry(p.rm_id().to_string()).or_default();
                p.on_timer(&t, out);
            }
        }
    }
}
