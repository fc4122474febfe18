//! The scheduling pass: queue, application, ask and node order (spec 8).

use std::sync::Arc;

use super::*;

impl Partition {
    /// Runs one scheduling pass: up to `budget` allocations, each decided on
    /// the state the previous one left. Returns the number made.
    pub fn schedule(
        &mut self,
        cb: Option<&dyn ResourceManagerCallback>,
        budget: usize,
        out: &mut Outcomes,
    ) -> usize {
        let root = self.queues.get(ROOT);
        if root.max.is_none() || !root.pending.is_strictly_positive() {
            return 0;
        }
        let cb = cb.filter(|c| c.has_predicates());
        let mut pass = PassState::default();
        let mut made = 0;
        while made < budget {
            let Some((app_id, key, node_id)) = self.find_in_queue(ROOT, cb, &mut pass) else {
                break;
            };
            self.commit(&app_id, &key, &node_id, out);
            made += 1;
        }
        out.events.append(&mut pass.events); // lifecycle-work: REQUEST events
        made
    }

    /// Depth-first search for the next allocation in fair queue order.
    pub(super) fn find_in_queue(
        &self,
        q: QueueId,
        cb: Option<&dyn ResourceManagerCallback>,
        pass: &mut PassState,
    ) -> Option<(Arc<str>, Arc<str>, Arc<str>)> {
        let queue = self.queues.get(q);
        if !queue.leaf {
            for child in self.queues.sorted_children(q) {
                if pass.exhausted_queues.contains(&child) {
                    continue;
                }
                if let Some(found) = self.find_in_queue(child, cb, pass) {
                    return Some(found);
                }
            }
            pass.exhausted_queues.insert(q);
            return None;
        }
        let headroom = self.queues.headroom(q);
        for app_id in self.app_order(q) {
            if pass.exhausted_apps.contains(&app_id) {
                continue;
            }
            if let Some((key, node)) = self.find_for_app(&app_id, headroom.as_ref(), cb, pass) {
                return Some((app_id, key, node));
            }
            pass.exhausted_apps.insert(app_id);
        }
        pass.exhausted_queues.insert(q);
        None
    }

    /// Candidate applications of a leaf in its policy's order (spec 8.4).
    pub(super) fn app_order(&self, q: QueueId) -> Vec<Arc<str>> {
        let queue = self.queues.get(q);
        let apps = queue.apps.values().filter_map(|id| self.apps.get(id));
        match queue.sort_policy {
            AppSortPolicy::Fifo => apps
                .filter(|a| a.has_pending())
                .map(|a| a.id.clone())
                .collect(),
            AppSortPolicy::Fair => {
                let mut v: Vec<_> = apps
                    .filter(|a| a.has_pending())
                    .map(|a| (shares(&a.allocated, queue.guaranteed.as_ref()), a))
                    .collect();
                v.sort_by(|(sa, a), (sb, b)| {
                    compare_shares(sa, sb)
                        .then(a.seq.cmp(&b.seq))
                        .then(a.id.cmp(&b.id))
                });
                v.into_iter().map(|(_, a)| a.id.clone()).collect()
            }
            AppSortPolicy::StateAware => {
                let all: Vec<&Application> = apps.collect();
                let starting = all.iter().any(|a| a.state == AppState::Starting);
                let mut admitted_accepted = false;
                let mut out = Vec::new();
                for a in all {
                    if !a.has_pending() {
                        continue;
                    }
                    if a.state == AppState::Accepted {
                        if starting || admitted_accepted {
                            continue;
                        }
                        admitted_accepted = true;
                    }
                    out.push(a.id.clone());
                }
                out
            }
        }
    }

    /// Tries the asks of one application in order (spec 8.5).
    pub(super) fn find_for_app(
        &self,
        app_id: &Arc<str>,
        headroom: Option<&Resource>,
        cb: Option<&dyn ResourceManagerCallback>,
        pass: &mut PassState,
    ) -> Option<(Arc<str>, Arc<str>)> {
        let app = &self.apps[app_id];
        let start = match pass.ask_cursor.get(app_id) {
            Some(k) => Bound::Excluded(k.clone()),
            None => Bound::Unbounded,
        };
        for okey in app.ask_order.range((start, Bound::Unbounded)) {
            let ask = &app.asks[&okey.2];
            let fits_queue = headroom.is_none_or(|h| ask.resource.fits_in_max_undef(h));
            if fits_queue {
                if let Some(node) = self.find_node(ask, cb, pass) {
                    return Some((ask.key.clone(), node));
                }
            } else {
                // lifecycle-work: skipped for queue headroom (spec 13.2).
                pass.events.push(self.queue_headroom_event(app, ask));
            }
            pass.ask_cursor.insert(app_id.clone(), okey.clone());
        }
        None
    }

    /// The first node in policy order that takes the ask (spec 8.7).
    pub(super) fn find_node(
        &self,
        ask: &Ask,
        cb: Option<&dyn ResourceManagerCallback>,
        pass: &mut PassState,
    ) -> Option<Arc<str>> {
        let try_node = |n: &Node| -> bool {
            if !n.fits_available(&ask.resource) {
                return false;
            }
            match cb {
                None => true,
                Some(cb) => {
                    let args = si::PredicatesArgs {
                        allocation_key: ask.key.to_string(),
                        node_id: n.id.to_string(),
                        allocate: true,
                    };
                    match cb.predicates(&args) {
                        Ok(()) => true,
                        Err(reason) => {
                            log::debug!("predicates refused {} on {}: {reason}", ask.key, n.id);
                            false
                        }
                    }
                }
            }
        };
        if let Some(required) = &ask.required_node {
            let n = self.nodes.get(required.as_str())?;
            return try_node(n).then(|| n.id.clone());
        }
        let shape_cacheable = cb.is_none();
        if shape_cacheable && pass.unfit_shapes.contains(&ask.resource) {
            return None;
        }
        for key in &self.node_order {
            let n = &self.nodes[&key.id];
            if n.schedulable && try_node(n) {
                return Some(n.id.clone());
            }
        }
        if shape_cacheable {
            pass.unfit_shapes.insert(ask.resource.clone());
        }
        None
    }

    /// Makes the allocation (spec 8.7 step 3 and 8.8) and queues its report.
    pub(super) fn commit(
        &mut self,
        app_id: &Arc<str>,
        key: &Arc<str>,
        node_id: &Arc<str>,
        out: &mut Outcomes,
    ) {
        let app = self.apps.get_mut(app_id).expect("found by the search");
        let ask = app.asks.get_mut(key).expect("found by the search");
        let resource = ask.resource.clone();
        app.ask_order.remove(&ask.order_key());
        ask.pending_repeat -= 1;
        if ask.pending_repeat > 0 {
            app.ask_order.insert(ask.order_key());
        }
        let ask = ask.clone();
        app.pending = app.pending.sub_clamped(&resource);
        app.allocated.add_assign(&resource);
        let uuid: Arc<str> = Arc::from(uuid::Uuid::new_v4().to_string());
        app.allocations.insert(uuid.clone());
        let queue = app.queue;
        self.queues.sub_pending(queue, &resource);
        self.queues.add_allocated(queue, &resource);
        let node = self.nodes.get_mut(node_id).expect("found by the search");
        node.allocated.add_assign(&resource);
        node.allocations.insert(uuid.clone());
        self.reposition_node(node_id);
        self.allocation_count += 1;
        out.assumed.push(si::AssumedAllocation {
            allocation_key: key.to_string(),
            node_id: node_id.to_string(),
        });
        out.allocation().new.push(si::Allocation {
            allocation_key: key.to_string(),
            allocation_tags: ask.tags.clone(),
            uuid: uuid.to_string(),
            resource_per_alloc: Some(resource.to_proto()),
            priority: Some(si::Priority {
                priority: Some(si::priority::Priority::PriorityValue(ask.priority)),
            }),
            queue_name: self.queues.get(queue).path.clone(),
            node_id: node_id.to_string(),
            application_id: app_id.to_string(),
            partition_name: self.name.clone(),
            task_group_name: ask.task_group.clone(),
            placeholder: ask.placeholder,
        });
        self.allocations.insert(
            uuid.clone(),
            Allocation {
                uuid,
                key: key.clone(),
                app_id: app_id.clone(),
                node_id: node_id.clone(),
                resource,
                queue,
                tags: ask.tags,
                priority: ask.priority,
                task_group: ask.task_group,
                placeholder: ask.placeholder,
            },
        );
        if !ask.placeholder {
            self.fire(app_id, AppEvent::Run, None, out);
        }
    }

    /// Whether any queue in this partition has demand.
    pub fn has_pending(&self) -> bool {
        self.queues.get(ROOT).pending.is_strictly_positive() && !self.nodes.is_empty()
    }
}
