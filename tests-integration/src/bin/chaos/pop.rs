//! Scenario: pop-mode push consumers (RocketMQ 5) SIGKILLed and restarted.

use super::*;
use rmq_tests_integration::child::CHILD_POP_INVISIBLE;

/// The push consumer's defaults the pop child runs with (`PushConsumerBuilder`):
/// `pull_threshold_for_queue` and `pull_batch_size`.
const PULL_THRESHOLD_FOR_QUEUE: usize = 1000;
const PULL_BATCH_SIZE: usize = 32;
/// Pop child processes.
const POP_PROCESSES: usize = 2;
/// How long each listener call of the pop children takes: at the pace of the scenario
/// (100 msg/s) about 10 messages are in hand per process at any time, so that a kill finds some.
const LISTENER_DELAY: Duration = Duration::from_millis(200);

/// Why the scenario does not run on a broker line, if it does not.
pub(super) fn unsupported(env: &Env) -> Option<String> {
    (env.broker.major_version() != Some(5)).then(|| {
        format!(
            "pop needs RocketMQ 5 (broker {} has no POP_MESSAGE / ACK_MESSAGE)",
            env.broker.version
        )
    })
}

/// Two pop-mode `push-child` processes (invisible time [`CHILD_POP_INVISIBLE`], 5 s) read a
/// topic of 8 queues fed at a steady pace; one of them is SIGKILLed and restarted several times.
/// Each delivery is recorded when its listener call begins.
///
/// A popped message the killed process had not acked comes back once its invisible time is
/// over, to any member. Nothing else should come back (listener calls take [`LISTENER_DELAY`],
/// far below the invisible time). So, for a message delivered at t1 by process i and again at t2:
///
/// ```text
/// explained  ⇔  i was killed at t_k with t1 ≤ t_k ≤ t1 + V   (V = CHILD_POP_INVISIBLE)
///               and t2 ≥ t1 + V − 0.2 s                          (not before its invisible time;
///                                                                   times are 200 ms samples)
/// duplicates(k) ≤ in flight at k ≤ QUEUES × (pull_threshold_for_queue + pull_batch_size)
///                = 8 × (1000 + 32)                                (popped, not yet acked)
/// ```
///
/// The revive lag (t2 − t1 − V: the broker's revive scan plus the next pop) is reported.
/// Lost: an acknowledged send never delivered.
pub(super) async fn pop_kills(env: &Arc<Env>, opts: &Opts, rng: &mut Rng) -> Outcome {
    let n: usize = opts
        .messages
        .unwrap_or(if opts.quick { 4_000 } else { 30_000 });
    let span = Duration::from_secs(if opts.quick { 40 } else { 150 });
    let kills = if opts.quick { 3 } else { 10 };
    let drain_limit = Duration::from_secs(if opts.quick { 90 } else { 180 });
    let tick = Duration::from_millis(200);
    let mut violations = Vec::new();
    let topic = env.topic("chaos_pp", QUEUES).await;
    let group = rmq_testkit::unique_name("chaos_pp_cg");
    let dir = std::env::temp_dir().join(rmq_testkit::unique_name("chaos_pp"));
    let _ = fs::create_dir_all(&dir);
    let start = Instant::now();
    let spawn = |g: usize| {
        spawn_child_mode(
            env.namesrv(),
            &group,
            &topic,
            &dir.join(format!("p-{g}.txt")),
            u64::try_from(LISTENER_DELAY.as_millis()).unwrap_or(200),
            ChildMode::Pop,
        )
    };
    let mut incs: Vec<Incarnation> = Vec::new();
    let mut slots = Vec::new();
    for s in 0..POP_PROCESSES {
        incs.push(Incarnation {
            child: spawn(s),
            killed: false,
            killed_at: None,
            in_flight: HashSet::new(),
            sizes: Vec::new(),
        });
        slots.push(s);
    }
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
    // Slot 0 is the one killed; slot 1 keeps running.
    let mut restart_at: Option<Duration> = None;
    let mut ticker = tokio::time::interval(tick);
    let mut log = SendLog::default();
    let mut drain_start: Option<Instant> = None;
    loop {
        ticker.tick().await;
        let now = start.elapsed();
        for inc in incs.iter_mut() {
            let len = fs::metadata(inc.child.out()).map_or(0, |m| m.len());
            inc.sizes.push((now, len));
        }
        if restart_at.is_some_and(|t| t <= now) {
            restart_at = None;
            let g = incs.len();
            incs.push(Incarnation {
                child: spawn(g),
                killed: false,
                killed_at: None,
                in_flight: HashSet::new(),
                sizes: Vec::new(),
            });
            slots[0] = g;
        }
        if restart_at.is_none() && kill_times.front().is_some_and(|t| *t <= now) {
            kill_times.pop_front();
            let idx = slots[0];
            incs[idx].child.kill();
            let killed_at = start.elapsed();
            incs[idx].killed = true;
            incs[idx].killed_at = Some(killed_at);
            let len = fs::metadata(incs[idx].child.out()).map_or(0, |m| m.len());
            incs[idx].sizes.push((killed_at, len));
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
            // Everything delivered, and the last kill's messages had time to come back.
            let settled = incs
                .iter()
                .filter_map(|i| i.killed_at)
                .max()
                .is_none_or(|k| start.elapsed() > k + CHILD_POP_INVISIBLE + Duration::from_secs(5));
            if (settled && log.acked.keys().all(|id| seen.contains(id)))
                || d.elapsed() > drain_limit
            {
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

    let mut by_id: HashMap<&str, Vec<(Duration, usize)>> = HashMap::new();
    let mut deliveries = 0usize;
    for (i, recs) in all.iter().enumerate() {
        for (t, r) in recs {
            deliveries += 1;
            by_id.entry(r.msg_id.as_str()).or_default().push((*t, i));
        }
    }
    let mut dups_per_inc = vec![0usize; incs.len()];
    let mut unexplained: Vec<String> = Vec::new();
    let mut early: Vec<String> = Vec::new();
    let mut revive_lag: Vec<f64> = Vec::new();
    let mut redeliveries = 0usize;
    for (id, ds) in by_id.iter_mut() {
        ds.sort();
        for w in ds.windows(2) {
            let ((t1, i), (t2, j)) = (w[0], w[1]);
            redeliveries += 1;
            dups_per_inc[i] += 1;
            let killed_in_time = incs[i]
                .killed_at
                .is_some_and(|k| k + tick >= t1 && k <= t1 + CHILD_POP_INVISIBLE);
            if !killed_in_time {
                unexplained.push(format!(
                    "{id} delivered by process {i} at {:.1} s, again by process {j} at {:.1} s",
                    t1.as_secs_f64(),
                    t2.as_secs_f64()
                ));
            }
            if t2 + tick < t1 + CHILD_POP_INVISIBLE {
                early.push(format!(
                    "{id} at {:.1} s and {:.1} s",
                    t1.as_secs_f64(),
                    t2.as_secs_f64()
                ));
            }
            revive_lag.push(t2.saturating_sub(t1 + CHILD_POP_INVISIBLE).as_secs_f64());
        }
    }
    let per_kill_bound =
        usize::try_from(QUEUES).unwrap_or(8) * (PULL_THRESHOLD_FOR_QUEUE + PULL_BATCH_SIZE);
    let per_kill: Vec<usize> = incs
        .iter()
        .enumerate()
        .filter(|(_, i)| i.killed)
        .map(|(k, _)| dups_per_inc[k])
        .collect();
    if let Some(worst) = per_kill.iter().max().filter(|&&d| d > per_kill_bound) {
        violations.push(format!(
            "pop (rmq PushConsumer, pop mode): {worst} redeliveries after one kill > bound \
             {per_kill_bound}"
        ));
    }
    if !unexplained.is_empty() {
        violations.push(format!(
            "pop (rmq PushConsumer, pop mode): {} of {redeliveries} redeliveries without a kill \
             of their consumer within the invisible time, e.g. {}",
            unexplained.len(),
            unexplained[..unexplained.len().min(3)].join(", ")
        ));
    }
    if !early.is_empty() {
        violations.push(format!(
            "pop (rmq PushConsumer, pop mode): {} redelivered before their invisible time, e.g. {}",
            early.len(),
            early[..early.len().min(3)].join(", ")
        ));
    }
    let mut missing: Vec<usize> = log
        .acked
        .iter()
        .filter(|(id, _)| !by_id.contains_key(id.as_str()))
        .map(|(_, &s)| s)
        .collect();
    missing.sort_unstable();
    if !missing.is_empty() {
        violations.push(format!(
            "pop (rmq PushConsumer, pop mode): lost {} (first seqs {:?})",
            missing.len(),
            &missing[..missing.len().min(10)]
        ));
    }
    if log.acked.len() != n {
        violations.push(format!("{} of {n} messages acknowledged", log.acked.len()));
    }
    revive_lag.sort_by(f64::total_cmp);
    let max_lag = revive_lag.last().copied().unwrap_or(0.0);
    let median_lag = revive_lag.get(revive_lag.len() / 2).copied().unwrap_or(0.0);
    let kills_done = per_kill.len();
    let _ = fs::remove_dir_all(&dir);
    Outcome {
        name: "pop",
        summary: format!(
            "sent {} lost {} redelivered {redeliveries} per kill {per_kill:?} (bound \
             {per_kill_bound}) revive lag median {median_lag:.1} s max {max_lag:.1} s kills \
             {kills_done} deliveries {deliveries} drained in {drained_in:.0} s",
            log.acked.len(),
            missing.len(),
        ),
        figures: json!({
            "client": "rmq PushConsumer, pop mode",
            "messages": n,
            "acknowledged": log.acked.len(),
            "send_errors": log.send_errors,
            "lost": missing.len(),
            "deliveries": deliveries,
            "processes": POP_PROCESSES,
            "kills": kills_done,
            "redeliveries": redeliveries,
            "redeliveries_per_kill": per_kill,
            "redelivery_bound_per_kill": per_kill_bound,
            "redeliveries_unexplained": unexplained.len(),
            "redelivered_early": early.len(),
            "invisible_seconds": CHILD_POP_INVISIBLE.as_secs_f64(),
            "revive_lag_median_seconds": median_lag,
            "revive_lag_max_seconds": max_lag,
            "drain_seconds": drained_in,
        }),
        violations,
    }
}
