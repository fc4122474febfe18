//! Resource managers that make random (sometimes hostile) requests through
//! the public Rust API, and record what the scheduler tells them. Shared by
//! the stateful fuzz target (`fuzz/fuzz_targets/two_rms.rs`, which includes
//! this file by path) and the concurrency and soak tests
//! (`tests/it/concurrency.rs`, `tests/memory/soak.rs`).
//!
//! Every id an RM creates starts with `r<index>` of its RM, so a check can
//! tell from an id alone who made it ([`owner_index`]). Besides its own
//! partitions an RM sometimes names another RM's internal partition
//! (`[rm]default`) and releases the other RM's allocations: a scheduler
//! that keeps RMs apart refuses those, and the checks catch one that does not.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prost::Message;
use sicore::proto::si::v1 as si;
use sicore::{Options, ResourceManagerCallback, Scheduler, SchedulerApi};

use super::books;

/// A source of choices: the fuzzer's input or a seeded generator.
pub trait Choose {
    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: u32) -> u32;

    /// One of `items`.
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u32) as usize]
    }

    /// True with probability about `1/n`.
    fn one_in(&mut self, n: u32) -> bool {
        self.below(n) == 0
    }
}

/// The configuration both policy groups use; `partition` names the second
/// partition, so that RM ids and partition names can be chosen to collide
/// (`x]y` + `default` against `x` + `y]default`).
pub fn config(partition: &str) -> String {
    format!(
        "
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources:
              max: {{memory: 5000, vcore: 50}}
          - name: b
            resources:
              guaranteed: {{memory: 100}}
            queues:
              - name: c
  - name: '{partition}'
    queues:
      - name: root
        submitacl: '*'
"
    )
}

/// Scheduler options for the tests: both policy groups in memory, short
/// timers so that applications complete and reservations happen.
pub fn options() -> Options {
    Options {
        policy_configs: BTreeMap::from([
            ("plain".to_string(), config("gpu")),
            ("tricky".to_string(), config("y]default")),
        ]),
        scheduling_interval: Duration::from_millis(10),
        reservation_delay: Duration::from_millis(0),
        app_completing_timeout: Duration::from_millis(20),
        event_flush_interval: Duration::from_millis(50),
        ..Options::default()
    }
}

/// The RM index an id was made by (`r<index>...`).
pub fn owner_index(id: &str) -> Option<usize> {
    let digits: String = id
        .strip_prefix('r')?
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// What one RM has been told.
#[derive(Default, Debug)]
pub struct Told {
    /// Allocations it holds: uuid to (application, node).
    pub live: HashMap<String, (String, String)>,
    /// Anything it was told about another RM's objects.
    pub foreign: Vec<String>,
    /// Allocations in total.
    pub allocated: usize,
    /// Releases in total.
    pub released: usize,
}

/// The callback side of one RM.
pub struct Recorder {
    /// This RM's index.
    pub index: usize,
    /// What it has been told.
    pub told: Mutex<Told>,
}

impl Recorder {
    fn foreign(&self, id: &str, what: &str, told: &mut Told) {
        if owner_index(id).is_some_and(|o| o != self.index) {
            told.foreign
                .push(format!("RM r{} was told {what} of {id}", self.index));
        }
    }
}

impl ResourceManagerCallback for Recorder {
    fn update_allocation(&self, r: &si::AllocationResponse) -> Result<(), String> {
        let mut t = self.told.lock().unwrap();
        for a in &r.new {
            self.foreign(&a.application_id, "a new allocation", &mut t);
            t.allocated += 1;
            t.live.insert(
                a.uuid.clone(),
                (a.application_id.clone(), a.node_id.clone()),
            );
        }
        for a in &r.released {
            self.foreign(&a.application_id, "a release", &mut t);
            t.released += 1;
            t.live.remove(&a.uuid);
        }
        for a in &r.released_asks {
            self.foreign(&a.application_id, "an ask release", &mut t);
        }
        Ok(())
    }

    fn update_application(&self, r: &si::ApplicationResponse) -> Result<(), String> {
        let mut t = self.told.lock().unwrap();
        for a in &r.accepted {
            self.foreign(&a.application_id, "an accepted application", &mut t);
        }
        for a in &r.updated {
            self.foreign(&a.application_id, "an application update", &mut t);
        }
        Ok(())
    }

    fn update_node(&self, r: &si::NodeResponse) -> Result<(), String> {
        let mut t = self.told.lock().unwrap();
        for n in &r.accepted {
            self.foreign(&n.node_id, "an accepted node", &mut t);
        }
        Ok(())
    }

    fn has_predicates(&self) -> bool {
        false
    }
}

/// One registered RM.
pub struct Rm {
    /// Its rmID.
    pub id: String,
    /// Its policy group.
    pub policy_group: String,
    /// Its callbacks.
    pub recorder: Arc<Recorder>,
    /// Whether it re-registered (its view of allocations then restarts,
    /// racing with callbacks still in flight: its view is not compared).
    pub reregistered: Mutex<bool>,
    /// Whether its first registration was accepted.
    pub registered: bool,
}

/// A scheduler and the RMs registered on it.
pub struct World {
    /// The scheduler.
    pub sched: Arc<Scheduler>,
    /// The RMs, by index.
    pub rms: Vec<Rm>,
}

impl World {
    /// A scheduler with one RM per `(rm_id, policy_group)`, all registered.
    pub fn new(rms: &[(&str, &str)]) -> Self {
        Self::with_options(options(), rms)
    }

    /// The same with other options.
    pub fn with_options(options: Options, rms: &[(&str, &str)]) -> Self {
        let sched = Arc::new(Scheduler::new(options).expect("scheduler starts"));
        let rms: Vec<Rm> = rms
            .iter()
            .enumerate()
            .map(|(index, (id, group))| Rm {
                id: id.to_string(),
                policy_group: group.to_string(),
                recorder: Arc::new(Recorder {
                    index,
                    told: Mutex::default(),
                }),
                reregistered: Mutex::new(false),
                registered: false,
            })
            .collect();
        let mut world = World { sched, rms };
        for i in 0..world.rms.len() {
            // A refused registration is allowed (a scheduler may refuse an
            // ambiguous rmID); that RM's requests are then refused too.
            world.rms[i].registered = world.register(i).is_ok();
        }
        world
    }

    fn register(&self, i: usize) -> Result<(), sicore::Error> {
        let rm = &self.rms[i];
        self.sched
            .register_resource_manager(
                si::RegisterResourceManagerRequest {
                    rm_id: rm.id.clone(),
                    policy_group: rm.policy_group.clone(),
                    version: "v0.12".into(),
                },
                rm.recorder.clone(),
            )
            .map(|_| ())
    }

    /// Checks the dump's books and that every partition holds only what
    /// its own RM made, and that no RM was told of another's objects.
    pub fn check(&self) -> Result<(), String> {
        let dump = self.dump()?;
        books::check_books(&dump)?;
        books::check_ownership(&dump, &|id| {
            owner_index(id)
                .and_then(|i| self.rms.get(i))
                .map(|r| r.id.clone())
        })?;
        for rm in &self.rms {
            if let Some(f) = rm.recorder.told.lock().unwrap().foreign.first() {
                return Err(f.clone());
            }
        }
        Ok(())
    }

    /// The state dump as JSON.
    pub fn dump(&self) -> Result<serde_json::Value, String> {
        let text = self
            .sched
            .state_dump()
            .map_err(|e| format!("state dump: {e}"))?;
        serde_json::from_str(&text).map_err(|e| format!("state dump is not JSON: {e}"))
    }

    /// Waits until every RM that never re-registered holds exactly the
    /// allocations of its partitions (callbacks are asynchronous, and the
    /// scheduler may move on by itself meanwhile), for up to `patience`.
    pub fn check_rm_views(&self, patience: Duration) -> Result<(), String> {
        let deadline = Instant::now() + patience;
        loop {
            let dump = self.dump()?;
            let mut mismatch = None;
            for rm in &self.rms {
                if *rm.reregistered.lock().unwrap() {
                    continue;
                }
                let mut in_core: Vec<String> = Vec::new();
                for p in dump["partitions"].as_array().into_iter().flatten() {
                    if p["rm_id"] != rm.id.as_str() {
                        continue;
                    }
                    for n in p["nodes"].as_array().into_iter().flatten() {
                        // The RM does not know a gang swap's real
                        // allocation before it lands.
                        let known = n["allocations"].as_array().into_iter().flatten();
                        for a in known.filter(|a| a["replacing"].is_null()) {
                            in_core.push(a["uuid"].as_str().unwrap_or_default().to_string());
                        }
                    }
                }
                in_core.sort();
                let mut told: Vec<String> = rm
                    .recorder
                    .told
                    .lock()
                    .unwrap()
                    .live
                    .keys()
                    .cloned()
                    .collect();
                told.sort();
                if in_core != told {
                    let only_rm: Vec<_> = told.iter().filter(|u| !in_core.contains(u)).collect();
                    let only_core: Vec<_> = in_core.iter().filter(|u| !told.contains(u)).collect();
                    mismatch = Some(format!(
                        "RM {}: only the RM holds {only_rm:?}, only the scheduler holds {only_core:?}",
                        rm.id
                    ));
                    break;
                }
            }
            match mismatch {
                None => return Ok(()),
                Some(m) if Instant::now() > deadline => return Err(m),
                Some(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = self.sched.close();
    }
}

/// The ids one actor (a thread, or the fuzzer for one RM) made and uses.
pub struct Actor {
    /// The RM it acts for.
    pub rm: usize,
    /// Prefix of every id it makes: `r<rm>` plus a per-actor part.
    pub prefix: String,
    /// Whether it may make hostile requests (other RMs' partitions).
    pub hostile: bool,
    /// Whether it may re-register its RM and reload its configuration.
    pub reregister: bool,
    nodes: Vec<String>,
    apps: Vec<String>,
    next: u64,
}

const QUEUES: &[&str] = &["root.a", "root.b.c", "root.b", "root.dyn", "root.a.x", ""];
const NAMES: &[&str] = &["memory", "vcore", "nvidia.com/gpu", "pods"];

impl Actor {
    /// An actor for RM `rm`; `tag` tells actors of one RM apart.
    pub fn new(rm: usize, tag: &str, hostile: bool, reregister: bool) -> Self {
        Actor {
            rm,
            prefix: format!("r{rm}{tag}"),
            hostile,
            reregister,
            nodes: Vec::new(),
            apps: Vec::new(),
            next: 0,
        }
    }

    fn fresh(&mut self, kind: &str) -> String {
        self.next += 1;
        format!("{}{kind}{}", self.prefix, self.next)
    }

    /// A partition name: mostly its own, sometimes another RM's internal name.
    fn partition(&self, w: &World, c: &mut impl Choose) -> String {
        match c.below(if self.hostile { 8 } else { 5 }) {
            0 => String::new(),
            1..=3 => "default".into(),
            4 => "gpu".into(),
            5 => format!("[{}]default", w.rms[self.rm].id),
            _ => format!(
                "[{}]default",
                w.rms[c.below(w.rms.len() as u32) as usize].id
            ),
        }
    }

    fn quantity(c: &mut impl Choose) -> i64 {
        match c.below(20) {
            0 => i64::MAX,
            1 => i64::MAX / 2 + 1,
            2 => 0,
            n => i64::from(n) * 50,
        }
    }

    fn resource(c: &mut impl Choose) -> si::Resource {
        let mut r = BTreeMap::new();
        r.insert(
            "memory".into(),
            si::Quantity {
                value: Self::quantity(c),
            },
        );
        r.insert(
            "vcore".into(),
            si::Quantity {
                value: Self::quantity(c) / 50,
            },
        );
        if c.one_in(4) {
            r.insert(
                c.pick(NAMES).to_string(),
                si::Quantity {
                    value: Self::quantity(c),
                },
            );
        }
        si::Resource { resources: r }
    }

    fn some<'a>(c: &mut impl Choose, ids: &'a [String]) -> Option<&'a String> {
        (!ids.is_empty()).then(|| &ids[c.below(ids.len() as u32) as usize])
    }

    /// Makes one random request. Refusals are expected (ids that do not
    /// exist, other RMs' partitions); what counts is the state afterwards.
    pub fn step(&mut self, w: &World, c: &mut impl Choose) {
        let rm_id = w.rms[self.rm].id.clone();
        let s = &w.sched;
        match c.below(100) {
            0..=11 => {
                let id = self.fresh("n");
                let _ = s.update_node(si::NodeRequest {
                    rm_id,
                    nodes: vec![si::NodeInfo {
                        node_id: id.clone(),
                        action: si::node_info::ActionFromRm::Create as i32,
                        attributes: [("si/node-partition".to_string(), self.partition(w, c))]
                            .into(),
                        schedulable_resource: Some(Self::resource(c)),
                        ..Default::default()
                    }],
                });
                self.nodes.push(id);
            }
            12..=17 => {
                let Some(id) = Self::some(c, &self.nodes).cloned() else {
                    return;
                };
                let action = match c.below(4) {
                    0 => si::node_info::ActionFromRm::DrainNode,
                    1 => si::node_info::ActionFromRm::DrainToSchedulable,
                    2 => si::node_info::ActionFromRm::Update,
                    _ => si::node_info::ActionFromRm::Decomission,
                };
                if action == si::node_info::ActionFromRm::Decomission {
                    self.nodes.retain(|n| *n != id);
                }
                let _ = s.update_node(si::NodeRequest {
                    rm_id,
                    nodes: vec![si::NodeInfo {
                        node_id: id,
                        action: action as i32,
                        attributes: [("si/node-partition".to_string(), self.partition(w, c))]
                            .into(),
                        schedulable_resource: Some(Self::resource(c)),
                        ..Default::default()
                    }],
                });
            }
            18..=29 => {
                let id = self.fresh("a");
                let queue = match c.below(4) {
                    0 => format!("root.dyn{}", c.below(8)),
                    _ => c.pick(QUEUES).to_string(),
                };
                let _ = s.update_application(si::ApplicationRequest {
                    rm_id,
                    new: vec![si::AddApplicationRequest {
                        application_id: id.clone(),
                        queue_name: queue,
                        partition_name: self.partition(w, c),
                        ugi: Some(si::UserGroupInformation {
                            user: "u".into(),
                            groups: vec!["g".into()],
                        }),
                        ..Default::default()
                    }],
                    ..Default::default()
                });
                self.apps.push(id);
            }
            30..=35 => {
                let Some(id) = Self::some(c, &self.apps).cloned() else {
                    return;
                };
                self.apps.retain(|a| *a != id);
                let _ = s.update_application(si::ApplicationRequest {
                    rm_id,
                    remove: vec![si::RemoveApplicationRequest {
                        application_id: id,
                        partition_name: self.partition(w, c),
                    }],
                    ..Default::default()
                });
            }
            36..=65 => {
                let Some(app) = Self::some(c, &self.apps).cloned() else {
                    return;
                };
                let asks = (0..=c.below(3))
                    .map(|_| si::AllocationAsk {
                        allocation_key: format!("{}k{}", self.prefix, c.below(30)),
                        application_id: app.clone(),
                        partition_name: self.partition(w, c),
                        resource_ask: Some(Self::resource(c)),
                        max_allocations: c.below(4) as i32,
                        priority: Some(si::Priority {
                            priority: Some(
                                si::priority::Priority::PriorityValue(c.below(3) as i32),
                            ),
                        }),
                        ..Default::default()
                    })
                    .collect();
                // The encoded path, as the C ABI takes it (the direct decoder).
                let req = si::AllocationRequest {
                    asks,
                    releases: None,
                    rm_id,
                };
                let _ = s.update_allocation_encoded(&req.encode_to_vec());
            }
            66..=85 => {
                // Release an allocation this RM holds; a hostile actor
                // sometimes picks another RM's.
                let from = if self.hostile && c.one_in(3) {
                    c.below(w.rms.len() as u32) as usize
                } else {
                    self.rm
                };
                let pick = {
                    let told = w.rms[from].recorder.told.lock().unwrap();
                    let live: Vec<_> = told.live.iter().collect();
                    (!live.is_empty()).then(|| {
                        let (u, (app, _)) = live[c.below(live.len() as u32) as usize];
                        (u.clone(), app.clone())
                    })
                };
                let Some((uuid, app)) = pick else {
                    return;
                };
                let partition = if from == self.rm {
                    self.partition(w, c)
                } else {
                    format!("[{}]default", w.rms[from].id)
                };
                let _ = s.update_allocation(si::AllocationRequest {
                    rm_id,
                    releases: Some(si::AllocationReleasesRequest {
                        allocations_to_release: vec![si::AllocationRelease {
                            partition_name: partition,
                            application_id: app,
                            uuid: if c.one_in(10) { String::new() } else { uuid },
                            termination_type: si::TerminationType::StoppedByRm as i32,
                            message: String::new(),
                        }],
                        allocation_asks_to_release: vec![],
                    }),
                    ..Default::default()
                });
            }
            86..=93 => {
                let Some(app) = Self::some(c, &self.apps).cloned() else {
                    return;
                };
                let _ = s.update_allocation(si::AllocationRequest {
                    rm_id,
                    releases: Some(si::AllocationReleasesRequest {
                        allocations_to_release: vec![],
                        allocation_asks_to_release: vec![si::AllocationAskRelease {
                            partition_name: self.partition(w, c),
                            application_id: app,
                            allocationkey: format!("{}k{}", self.prefix, c.below(30)),
                            ..Default::default()
                        }],
                    }),
                    ..Default::default()
                });
            }
            94..=96 if self.reregister => {
                let _ = s.update_configuration(&rm_id);
            }
            97..=99 if self.reregister => {
                *w.rms[self.rm].reregistered.lock().unwrap() = true;
                if w.register(self.rm).is_ok() {
                    let mut t = w.rms[self.rm].recorder.told.lock().unwrap();
                    t.live.clear();
                }
                self.nodes.clear();
                self.apps.clear();
            }
            _ => {}
        }
    }
}
