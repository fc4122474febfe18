use super::*;
use crate::options::Options;
use crate::scheduler::core::Core;
use dispatch::dump_response;
use http_body_util::BodyExt;
use hyper::body::Bytes;

/// A core thread with no RM, and a context using it.
fn context(reuse: Duration) -> (Arc<Context>, JoinHandle<()>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let (out, _) = crossbeam_channel::unbounded();
    let core = std::thread::spawn(move || {
        let core = Core::new(Options::default(), crate::scheduler::clock::system());
        crate::scheduler::core::run(core, rx, out)
    });
    let bound: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let settings = Settings::new(&RestOptions::default(), "127.0.0.1:1", bound).unwrap();
    let config = ConfigWorker::start(0, tx.clone(), ConfigLock::default()).unwrap();
    let ctx = Arc::new(Context {
        scheduler_id: 0,
        core: tx,
        metrics: Arc::default(),
        settings,
        reuse,
        cache: Mutex::new(None),
        dump_cache: Mutex::new(None),
        fetching: tokio::sync::Mutex::new(()),
        dumping: tokio::sync::Mutex::new(()),
        rm_dumps: Mutex::new(std::collections::HashMap::new()),
        slots: Mutex::new(Slots::default()),
        config,
    });
    (ctx, core)
}

/// Many readers of the state dump at once, as slow clients would hold
/// them: every response body is the one cached buffer, not a copy.
#[test]
fn dump_readers_share_one_buffer() {
    let (ctx, core) = context(Duration::from_secs(3600));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let bodies: Vec<Bytes> = rt.block_on(async {
        let mut readers = tokio::task::JoinSet::new();
        for _ in 0..32 {
            let ctx = ctx.clone();
            readers.spawn(async move {
                let resp = dump_response(&ctx).await.ok().expect("a dump");
                resp.into_body().collect().await.unwrap().to_bytes()
            });
        }
        let mut out = Vec::new();
        while let Some(b) = readers.join_next().await {
            out.push(b.unwrap());
        }
        out
    });
    let cached = ctx.dump_cache.lock().as_ref().unwrap().1.clone();
    assert!(cached.len() > 10, "a dump: {cached:?}");
    for b in &bodies {
        assert_eq!(b.len(), cached.len());
        assert_eq!(b.as_ptr(), cached.as_ptr(), "a reader got a copy");
    }
    ctx.core.send(Command::Shutdown).unwrap();
    core.join().unwrap();
}

#[test]
fn slots_per_peer_then_reserved_then_none() {
    let (ctx, core) = context(SNAPSHOT_REUSE);
    let a: IpAddr = "10.0.0.1".parse().unwrap();
    let b: IpAddr = "10.0.0.2".parse().unwrap();
    let per_peer = ctx.settings.max_per_peer;
    let taken: Vec<Slot> = (0..per_peer).map(|_| ctx.take_slot(a).unwrap()).collect();
    assert!(taken.iter().all(|s| *s == Slot::General(a)));
    // Past its own cap a peer only gets reserved slots...
    let reserved: Vec<Slot> = (0..settings::RESERVED_CONNECTIONS)
        .map(|_| ctx.take_slot(a).unwrap())
        .collect();
    assert!(reserved.iter().all(|s| *s == Slot::Reserved));
    // ... then nothing, while another peer still gets a general one.
    assert_eq!(ctx.take_slot(a), None);
    assert_eq!(ctx.take_slot(b), Some(Slot::General(b)));
    ctx.give_slot(Slot::General(a));
    assert_eq!(ctx.take_slot(a), Some(Slot::General(a)));
    ctx.core.send(Command::Shutdown).unwrap();
    core.join().unwrap();
}
