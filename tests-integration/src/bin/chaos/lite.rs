//! Scenario: a lite pull consumer's `Stream` pipeline with auto-commit, SIGKILLed and restarted.

use super::*;
use rmq_tests_integration::child::{LITE_AUTO_COMMIT, LITE_AUTO_COMMIT_INTERVAL, LITE_HANDED_OUT};

/// The `lite-child` next to this binary.
fn lite_child_bin() -> PathBuf {
    let me = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("chaos"));
    me.with_file_name("lite-child")
}

fn spawn_lite(namesrv: &str, group: &str, topic: &str, out: &Path) -> Child {
    let bin = lite_child_bin();
    let process = Command::new(&bin)
        .env(ENV_MODE, LITE_AUTO_COMMIT)
        .env(ENV_NAMESRV, namesrv)
        .env(ENV_GROUP, group)
        .env(ENV_TOPIC, topic)
        .env(ENV_OUT, out)
        .env(ENV_DELAY_MS, "20")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    Child::from_process(process, out.to_owned())
}

/// How late a commit may land after its tick: the oneway persist's transit and the timer's
/// scheduling delay on a loaded machine.
const PERSIST_ALLOWANCE: Duration = Duration::from_secs(1);

/// One `lite-child` (8 queues, auto-commit every [`LITE_AUTO_COMMIT_INTERVAL`]) reads a topic fed
/// at a steady pace; it is SIGKILLed and restarted several times.
///
/// With auto-commit, everything the stream handed out is committed at the next tick; a message
/// handed out is recorded in the same synchronous step. So a kill repeats exactly the messages
/// the killed process was handed out after the last commit that reached the broker, and nothing
/// else (one process: no rebalance moves a queue between live members). The bound, per kill k at
/// time t_k:
///
/// ```text
/// duplicates(k) ⊆ in_flight(k) = { handed out by k's process at offsets ≥ the broker's
///                                  committed offset of their queue, read right after the kill }
/// every m in in_flight(k) was handed out in (t_k − I − P, t_k]
///     I = LITE_AUTO_COMMIT_INTERVAL (1 s), P = PERSIST_ALLOWANCE (1 s)
/// ```
///
/// (the pipeline's `buffer_unordered(8)` does not enter it: its messages are already handed
/// out and recorded; messages buffered but not handed out are pulled again, never recorded twice).
/// Lost: an acknowledged send never handed out.
pub(super) async fn lite_stream(env: &Arc<Env>, opts: &Opts, rng: &mut Rng) -> Outcome {
    let n: usize = opts
        .messages
        .unwrap_or(if opts.quick { 4_000 } else { 30_000 });
    let span = Duration::from_secs(if opts.quick { 40 } else { 150 });
    let kills = if opts.quick { 4 } else { 12 };
    let drain_limit = Duration::from_secs(if opts.quick { 90 } else { 180 });
    let mut violations = Vec::new();
    let topic = env.topic("chaos_lt", QUEUES).await;
    let group = rmq_testkit::unique_name("chaos_lt_cg");
    let dir = std::env::temp_dir().join(rmq_testkit::unique_name("chaos_lt"));
    let _ = fs::create_dir_all(&dir);
    let start = Instant::now();
    let mut incs: Vec<Incarnation> = vec![Incarnation {
        child: spawn_lite(env.namesrv(), &group, &topic, &dir.join("l-0.txt")),
        killed: false,
        killed_at: None,
        in_flight: HashSet::new(),
        sizes: Vec::new(),
    }];
    let producer = env.producer().await;
    let sent = Arc::new(AtomicUsize::new(0));
    let mut producing = tokio::spawn(produce(
        producer.clone(),
        topic.clone(),
        n,
        0,
        span,
        sent.clone(),
    ));
    let span_ms = u64::try_from(span.as_millis()).unwrap_or(u64::MAX);
    let mut kill_times: Vec<Duration> = (0..kills)
        .map(|_| Duration::from_millis(rng.range(span_ms / 10, span_ms * 9 / 10)))
        .collect();
    kill_times.sort();
    let mut kill_times = std::collections::VecDeque::from(kill_times);
    let mut restart_at: Option<Duration> = None;
    let mut recovery: Vec<f64> = Vec::new();
    let mut awaiting_first: Option<(usize, Duration)> = None;
    let mut ticker = tokio::time::interval(Duration::from_millis(200));
    let mut log = SendLog::default();
    let mut drain_start: Option<Instant> = None;
    loop {
        ticker.tick().await;
        let now = start.elapsed();
        for inc in incs.iter_mut() {
            let len = fs::metadata(inc.child.out()).map_or(0, |m| m.len());
            inc.sizes.push((now, len));
        }
        // Recovery: from a kill to the first message the next process hands out.
        if let Some((idx, killed_at)) = awaiting_first {
            if incs.get(idx).is_some_and(|i| !i.child.records().is_empty()) {
                recovery.push((now - killed_at).as_secs_f64());
                awaiting_first = None;
            }
        }
        if restart_at.is_some_and(|t| t <= now) {
            restart_at = None;
            let out = dir.join(format!("l-{}.txt", incs.len()));
            incs.push(Incarnation {
                child: spawn_lite(env.namesrv(), &group, &topic, &out),
                killed: false,
                killed_at: None,
                in_flight: HashSet::new(),
                sizes: Vec::new(),
            });
            if let Some(a) = awaiting_first.as_mut() {
                a.0 = incs.len() - 1;
            }
        }
        if restart_at.is_none() && kill_times.front().is_some_and(|t| *t <= now) {
            kill_times.pop_front();
            let idx = incs.len() - 1;
            incs[idx].child.kill();
            let killed_at = start.elapsed();
            incs[idx].killed = true;
            incs[idx].killed_at = Some(killed_at);
            let len = fs::metadata(incs[idx].child.out()).map_or(0, |m| m.len());
            incs[idx].sizes.push((killed_at, len));
            let c = committed(env, &group, &topic).await;
            if c.is_none() {
                violations.push(format!(
                    "kill {}: the broker's committed offsets could not be read",
                    recovery.len() + 1
                ));
            }
            incs[idx].in_flight = incs[idx]
                .child
                .records()
                .iter()
                .filter(|r| r.queue_topic == LITE_HANDED_OUT)
                .filter(|r| {
                    c.as_ref().is_none_or(|c| {
                        usize::try_from(r.queue_id)
                            .ok()
                            .and_then(|q| c.get(q))
                            .is_none_or(|&o| r.queue_offset >= o)
                    })
                })
                .map(|r| (r.queue_id, r.queue_offset))
                .collect();
            awaiting_first = Some((usize::MAX, killed_at));
            restart_at = Some(now + Duration::from_millis(rng.range(200, 3000)));
        }
        if drain_start.is_none()
            && producing.is_finished()
            && kill_times.is_empty()
            && restart_at.is_none()
        {
            match (&mut producing).await {
                Ok(l) => log = l,
                Err(e) => violations.push(format!("the producer task failed: {e}")),
            }
            drain_start = Some(Instant::now());
        }
        if let Some(d) = drain_start {
            let seen: HashSet<String> = read_all(&incs)
                .into_iter()
                .flatten()
                .map(|(_, r)| r.msg_id)
                .collect();
            if log.acked.keys().all(|id| seen.contains(id)) || d.elapsed() > drain_limit {
                break;
            }
        }
    }
    let _ = producer.shutdown().await;
    let drained_in = drain_start.map_or(0.0, |d| d.elapsed().as_secs_f64());
    for inc in incs.iter_mut() {
        inc.child.kill();
    }
    let all = read_all(&incs);

    // Duplicates, each checked against the kill before it.
    let mut firsts: HashMap<&str, Vec<(usize, Duration, &ChildRecord)>> = HashMap::new();
    let mut deliveries = 0usize;
    for (i, recs) in all.iter().enumerate() {
        for (t, r) in recs {
            deliveries += 1;
            firsts
                .entry(r.msg_id.as_str())
                .or_default()
                .push((i, *t, r));
        }
    }
    let window = LITE_AUTO_COMMIT_INTERVAL + PERSIST_ALLOWANCE;
    let mut dups_per_kill = vec![0usize; incs.len()];
    let mut unexplained: Vec<String> = Vec::new();
    let mut outside_window: Vec<String> = Vec::new();
    for (id, ds) in &firsts {
        for w in ds.windows(2) {
            let (i, t, r) = w[0];
            let inc = &incs[i];
            dups_per_kill[i] += 1;
            if !(inc.killed && inc.in_flight.contains(&(r.queue_id, r.queue_offset))) {
                unexplained.push(format!(
                    "{id} (queue {} offset {}) handed out by process {i} at {:.1} s, again by \
                     process {} at {:.1} s",
                    r.queue_id,
                    r.queue_offset,
                    t.as_secs_f64(),
                    w[1].0,
                    w[1].1.as_secs_f64()
                ));
            }
        }
    }
    // The bound: what was beyond the committed offsets at a kill was handed out in the last
    // auto-commit interval (plus the persist allowance) before it.
    let mut in_flight_per_kill = Vec::new();
    for (i, inc) in incs.iter().enumerate() {
        let Some(killed_at) = inc.killed_at else {
            continue;
        };
        in_flight_per_kill.push(inc.in_flight.len());
        for (t, r) in &all[i] {
            // `t` is when the record was seen (≥ when it was written): earlier than the window
            // start means certainly outside it.
            if inc.in_flight.contains(&(r.queue_id, r.queue_offset))
                && *t + Duration::from_millis(200) < killed_at.saturating_sub(window)
            {
                outside_window.push(format!(
                    "process {i}: queue {} offset {} handed out by {:.1} s, killed at {:.1} s \
                     and still beyond the committed offset",
                    r.queue_id,
                    r.queue_offset,
                    t.as_secs_f64(),
                    killed_at.as_secs_f64()
                ));
            }
        }
    }
    let seen: HashSet<&str> = firsts.keys().copied().collect();
    let mut missing: Vec<usize> = log
        .acked
        .iter()
        .filter(|(id, _)| !seen.contains(id.as_str()))
        .map(|(_, &s)| s)
        .collect();
    missing.sort_unstable();
    if !missing.is_empty() {
        violations.push(format!(
            "lite stream (rmq LitePullConsumer): lost {} (first seqs {:?})",
            missing.len(),
            &missing[..missing.len().min(10)]
        ));
    }
    if log.acked.len() != n {
        violations.push(format!("{} of {n} messages acknowledged", log.acked.len()));
    }
    let duplicates: usize = dups_per_kill.iter().sum();
    if !unexplained.is_empty() {
        violations.push(format!(
            "lite stream (rmq LitePullConsumer): {} of {duplicates} duplicates not beyond the \
             committed offsets at a kill, e.g. {}",
            unexplained.len(),
            unexplained[..unexplained.len().min(3)].join(", ")
        ));
    }
    if !outside_window.is_empty() {
        violations.push(format!(
            "lite stream (rmq LitePullConsumer): {} messages uncommitted longer than the \
             auto-commit interval + {} s at a kill, e.g. {}",
            outside_window.len(),
            PERSIST_ALLOWANCE.as_secs(),
            outside_window[..outside_window.len().min(3)].join(", ")
        ));
    }
    let kills_done = incs.iter().filter(|i| i.killed).count();
    let per_kill: Vec<usize> = incs
        .iter()
        .enumerate()
        .filter(|(_, i)| i.killed)
        .map(|(k, _)| dups_per_kill[k])
        .collect();
    let _ = fs::remove_dir_all(&dir);
    Outcome {
        name: "lite",
        summary: format!(
            "sent {} lost {} dup {duplicates} per kill {per_kill:?} (in flight {in_flight_per_kill:?}) \
             kills {kills_done} recovery {:?} s deliveries {deliveries} drained in {drained_in:.0} s",
            log.acked.len(),
            missing.len(),
            recovery
                .iter()
                .map(|r| (r * 10.0).round() / 10.0)
                .collect::<Vec<_>>()
        ),
        figures: json!({
            "client": "rmq LitePullConsumer stream, auto-commit",
            "messages": n,
            "acknowledged": log.acked.len(),
            "send_errors": log.send_errors,
            "lost": missing.len(),
            "deliveries": deliveries,
            "kills": kills_done,
            "duplicates": duplicates,
            "duplicates_per_kill": per_kill,
            "in_flight_per_kill": in_flight_per_kill,
            "duplicates_unexplained": unexplained.len(),
            "uncommitted_beyond_window": outside_window.len(),
            "auto_commit_interval_seconds": LITE_AUTO_COMMIT_INTERVAL.as_secs_f64(),
            "persist_allowance_seconds": PERSIST_ALLOWANCE.as_secs_f64(),
            "recovery_seconds": recovery,
            "drain_seconds": drained_in,
        }),
        violations,
    }
}
