//! `chaos`: bounded, self-stopping chaos scenarios against the real RocketMQ at `NAMESRV_ADDR`
//! (started by `scripts/chaos.sh`, which also exports `RMQ_INSTANCE` so that broker kills and
//! restarts hit the chaos instance only).
//!
//! ```text
//! chaos [--quick] [--scenario clustering|orderly|restart|producer|lite|pop]... [--messages N] [--seed N] [--out DIR]
//! ```
//!
//! Prints one summary line per scenario, writes every figure as JSON into `DIR` (one file per
//! run) and exits 1 when a scenario found a violation (a lost message, a DLQ that is not exactly
//! the always-failing messages, duplicates beyond what was in flight at the kills, leaked file
//! descriptors / tasks, memory growth).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rmq_producer::{Message, Producer, UnsentExt};
use rmq_protocol::RequestCode;
use rmq_testkit::proxy::{FaultProxy, Rule};
use rmq_tests_integration::child::{
    Child, ChildMode, ChildRecord, ENV_DEAD_TAG, ENV_DELAY_MS, ENV_FAIL_TAG, ENV_GROUP,
    ENV_MAX_RECONSUME, ENV_MODE, ENV_NAMESRV, ENV_OUT, ENV_TOPIC,
};
use rmq_tests_integration::consumer::{self, ConsumerSpec};
use rmq_tests_integration::{Env, Recorder};
use serde_json::{Value, json};

#[path = "chaos/lite.rs"]
mod lite;
#[path = "chaos/pop.rs"]
mod pop;

const QUEUES: i32 = 8;
const CONSUMERS: usize = 3;
const FAIL_TAG: &str = "fail";
const DEAD_TAG: &str = "dead";
const OK_TAG: &str = "ok";
/// Max reconsume times of the clustering consumers: a dead message is delivered 1 + 2 times.
const MAX_RECONSUME: i32 = 2;

#[derive(Debug, Clone)]
struct Opts {
    quick: bool,
    scenarios: Vec<String>,
    messages: Option<usize>,
    seed: u64,
    out: PathBuf,
}

fn parse_args() -> Result<Opts, String> {
    let mut opts = Opts {
        quick: false,
        scenarios: Vec::new(),
        messages: None,
        seed: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_secs()),
        out: PathBuf::from("chaos/results"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--quick" => opts.quick = true,
            "--scenario" => opts.scenarios.push(value("--scenario")?),
            "--messages" => {
                opts.messages = Some(
                    value("--messages")?
                        .parse()
                        .map_err(|e| format!("--messages: {e}"))?,
                );
            }
            "--seed" => {
                opts.seed = value("--seed")?
                    .parse()
                    .map_err(|e| format!("--seed: {e}"))?;
            }
            "--out" => opts.out = PathBuf::from(value("--out")?),
            "-h" | "--help" => {
                return Err(
                    "usage: chaos [--quick] [--scenario clustering|orderly|restart|producer|lite|pop]... \
                            [--messages N] [--seed N] [--out DIR]"
                        .to_owned(),
                );
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if opts.scenarios.is_empty() {
        opts.scenarios = vec![
            "clustering".into(),
            "orderly".into(),
            "restart".into(),
            "producer".into(),
            "lite".into(),
            "pop".into(),
        ];
    }
    Ok(opts)
}

/// A small deterministic generator (xorshift64*): the seed is printed, so a run can be replayed.
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `lo..hi` (`lo` when empty).
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            lo
        } else {
            lo + self.next() % (hi - lo)
        }
    }
}

/// What a scenario found.
#[derive(Debug)]
struct Outcome {
    name: &'static str,
    violations: Vec<String>,
    summary: String,
    figures: Value,
}

fn main() -> ExitCode {
    // Broker reads during a broker outage panic inside spawned tasks (the `Env` helpers panic on
    // errors) and are retried: one line each, no backtrace.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("chaos: call failed (retried): {info}");
    }));
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("chaos: {e}");
            return ExitCode::from(64);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("chaos: no tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(opts))
}

async fn run(opts: Opts) -> ExitCode {
    let started = Instant::now();
    println!(
        "chaos: seed {} ({} run), scenarios {:?}",
        opts.seed,
        if opts.quick { "quick" } else { "full" },
        opts.scenarios
    );
    let env = Arc::new(Env::new().await);
    let mut rng = Rng(opts.seed | 1);
    let mut outcomes = Vec::new();
    let mut skipped: Vec<Value> = Vec::new();
    for name in &opts.scenarios {
        let t = Instant::now();
        let outcome = match name.as_str() {
            "clustering" => clustering(&env, &opts, &mut rng).await,
            "restart" => restart(&env, &opts).await,
            "producer" => producer_failover(&env, &opts, &mut rng).await,
            "orderly" => orderly(&env, &opts, &mut rng).await,
            "lite" => lite::lite_stream(&env, &opts, &mut rng).await,
            "pop" => {
                if let Some(why) = pop::unsupported(&env) {
                    println!("chaos {name:<10} SKIPPED: {why}");
                    skipped.push(json!({"name": name, "reason": why}));
                    continue;
                }
                pop::pop_kills(&env, &opts, &mut rng).await
            }
            other => {
                eprintln!("chaos: unknown scenario {other}");
                return ExitCode::from(64);
            }
        };
        let verdict = if outcome.violations.is_empty() {
            "ok".to_owned()
        } else {
            format!("VIOLATION: {}", outcome.violations.join("; "))
        };
        println!(
            "chaos {:<10} {} ({:.0} s) {verdict}",
            outcome.name,
            outcome.summary,
            t.elapsed().as_secs_f64()
        );
        outcomes.push((outcome, t.elapsed()));
    }
    env.shutdown().await;

    let failed = outcomes.iter().any(|(o, _)| !o.violations.is_empty());
    let report = json!({
        "mode": if opts.quick { "quick" } else { "full" },
        "seed": opts.seed,
        "broker_version": env.broker.version,
        "started_unix": SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        "seconds": started.elapsed().as_secs_f64(),
        "ok": !failed,
        "skipped": skipped,
        "scenarios": outcomes.iter().map(|(o, d)| json!({
            "name": o.name,
            "ok": o.violations.is_empty(),
            "violations": o.violations,
            "seconds": d.as_secs_f64(),
            "figures": o.figures,
        })).collect::<Vec<_>>(),
    });
    if let Err(e) = write_report(&opts, &report) {
        eprintln!("chaos: cannot write the JSON report: {e}");
        return ExitCode::FAILURE;
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn write_report(opts: &Opts, report: &Value) -> std::io::Result<()> {
    fs::create_dir_all(&opts.out)?;
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mode = if opts.quick { "quick" } else { "full" };
    let path = opts.out.join(format!("{mode}-{secs}.json"));
    let text = serde_json::to_string_pretty(report).map_err(std::io::Error::other)?;
    fs::write(&path, text + "\n")?;
    println!("chaos: figures in {}", path.display());
    Ok(())
}

/// The `push-child` next to this binary.
fn push_child_bin() -> PathBuf {
    let me = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("chaos"));
    me.with_file_name("push-child")
}

/// Kills, stops or starts a broker of the chaos instance through `scripts/rocketmq-local.sh`.
fn broker_ctl(action: &str, name: &str) -> Result<(), String> {
    let status = Command::new("bash")
        .arg(rmq_testkit::script_path())
        .arg(action)
        .arg(name)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| format!("{action} {name}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{action} {name}: {status}"))
    }
}

async fn broker_ctl_async(action: &'static str, name: &'static str) -> Result<(), String> {
    tokio::task::spawn_blocking(move || broker_ctl(action, name))
        .await
        .map_err(|e| e.to_string())?
}

/// The group's committed offsets of the topic's queues, `None` while the broker does not answer
/// (the `Env` helpers panic on errors; the panic stays in the spawned task).
async fn committed(env: &Arc<Env>, group: &str, topic: &str) -> Option<Vec<i64>> {
    let (env, group, topic) = (env.clone(), group.to_owned(), topic.to_owned());
    let task = tokio::spawn(async move { env.committed_offsets(&group, &topic, QUEUES).await });
    match tokio::time::timeout(Duration::from_secs(10), task).await {
        Ok(Ok(v)) => Some(v.into_iter().map(|o| o.unwrap_or(0)).collect()),
        _ => None,
    }
}

/// Every message of a topic, pulled raw (`None` while the broker does not answer).
async fn pull_topic(env: &Arc<Env>, topic: &str, queues: i32) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for q in 0..queues {
        let (env2, topic2) = (env.clone(), topic.to_owned());
        let task = tokio::spawn(async move { env2.pull_all(&topic2, q).await });
        match tokio::time::timeout(Duration::from_secs(20), task).await {
            Ok(Ok(msgs)) => out.extend(msgs.into_iter().map(|m| m.msg_id)),
            _ => return None,
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------------------------
// Scenario 1: clustering under consumer kills, broker kills and a send-back blackhole.
// ---------------------------------------------------------------------------------------------

/// One incarnation of a consumer process.
#[derive(Debug)]
struct Incarnation {
    child: Child,
    killed: bool,
    /// When it was SIGKILLed.
    killed_at: Option<Duration>,
    /// (queue id, offset) of what it had taken beyond the committed offsets when killed.
    in_flight: HashSet<(i32, i64)>,
    /// (time since the start, output file size) samples.
    sizes: Vec<(Duration, u64)>,
}

/// What a message is meant to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ok,
    Fail,
    Dead,
}

fn kind_of(seq: usize, n: usize, dead: usize) -> Kind {
    // `dead` messages spread over the run, 5 % (every 20th) fail their first delivery.
    if dead > 0 && seq % (n / dead).max(1) == 3 && seq / (n / dead).max(1) < dead {
        Kind::Dead
    } else if seq % 20 == 7 {
        Kind::Fail
    } else {
        Kind::Ok
    }
}

fn spawn_child(namesrv: &str, group: &str, topic: &str, out: &Path, delay_ms: u64) -> Child {
    spawn_child_mode(namesrv, group, topic, out, delay_ms, ChildMode::Record)
}

fn spawn_child_mode(
    namesrv: &str,
    group: &str,
    topic: &str,
    out: &Path,
    delay_ms: u64,
    mode: ChildMode,
) -> Child {
    let bin = push_child_bin();
    let process = Command::new(&bin)
        .env(ENV_MODE, mode.as_str())
        .env(ENV_NAMESRV, namesrv)
        .env(ENV_GROUP, group)
        .env(ENV_TOPIC, topic)
        .env(ENV_OUT, out)
        .env(ENV_FAIL_TAG, FAIL_TAG)
        .env(ENV_DEAD_TAG, DEAD_TAG)
        .env(ENV_MAX_RECONSUME, MAX_RECONSUME.to_string())
        .env(ENV_DELAY_MS, delay_ms.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    Child::from_process(process, out.to_owned())
}

/// The sends of the clustering scenario: seq → msg id of every acknowledged message.
#[derive(Debug, Default)]
struct SendLog {
    acked: HashMap<String, usize>,
    send_errors: usize,
}

/// Sends `n` messages (body = sequence number) in batches of 10 at a steady pace over `span`,
/// retrying a batch until the broker takes it (a broker kill makes sends fail for a while).
async fn produce(
    producer: Producer,
    topic: String,
    n: usize,
    dead: usize,
    span: Duration,
    sent: Arc<AtomicUsize>,
) -> SendLog {
    const BATCH: usize = 10;
    let mut log = SendLog::default();
    let start = Instant::now();
    let mut seq = 0;
    while seq < n {
        let end = (seq + BATCH).min(n);
        let due = span.mul_f64(seq as f64 / n as f64);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            tokio::time::sleep(wait).await;
        }
        let msgs: Vec<Message> = (seq..end)
            .map(|i| {
                let tag = match kind_of(i, n, dead) {
                    Kind::Ok => OK_TAG,
                    Kind::Fail => FAIL_TAG,
                    Kind::Dead => DEAD_TAG,
                };
                Message::new(&topic, i.to_string()).with_tags(tag)
            })
            .collect();
        match producer.send_batch(msgs).await {
            Ok(r) => {
                for (i, id) in r.msg_id.split(',').enumerate() {
                    log.acked.insert(id.to_owned(), seq + i);
                }
                seq = end;
                sent.store(seq, Ordering::Relaxed);
            }
            Err(_) => {
                log.send_errors += 1;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
    log
}

/// Every delivery recorded so far, per incarnation, with the time it was written (the first size
/// sample that covers its line; the last sample's time when none does yet).
fn read_all(incs: &[Incarnation]) -> Vec<Vec<(Duration, ChildRecord)>> {
    incs.iter()
        .map(|inc| {
            let text = fs::read_to_string(inc.child.out()).unwrap_or_default();
            let last = inc.sizes.last().map_or(Duration::ZERO, |s| s.0);
            let mut end = 0u64;
            let mut out = Vec::new();
            for line in text.split_inclusive('\n') {
                end += line.len() as u64;
                if !line.ends_with('\n') {
                    break; // torn last line
                }
                if let Some(r) = ChildRecord::parse(line.trim_end()) {
                    let k = inc.sizes.partition_point(|(_, len)| *len < end);
                    out.push((inc.sizes.get(k).map_or(last, |s| s.0), r));
                }
            }
            out
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    KillConsumer,
    KillBroker,
    BlackholeOn,
    BlackholeOff,
}

async fn clustering(env: &Arc<Env>, opts: &Opts, rng: &mut Rng) -> Outcome {
    let n = opts
        .messages
        .unwrap_or(if opts.quick { 10_000 } else { 100_000 });
    let dead = if opts.quick { 5 } else { 20 };
    let (produce_span, consumer_kills, broker_kills, blackhole, delay_ms) = if opts.quick {
        (Duration::from_secs(60), 6, 1, Duration::from_secs(10), 1)
    } else {
        (Duration::from_secs(300), 15, 2, Duration::from_secs(30), 1)
    };
    let drain_limit = Duration::from_secs(if opts.quick { 120 } else { 300 });
    let mut violations = Vec::new();

    let topic = env.topic("chaos_cl", QUEUES).await;
    let group = rmq_testkit::unique_name("chaos_cl_cg");
    let retry_topic = format!("%RETRY%{group}");
    let dlq_topic = format!("%DLQ%{group}");
    let proxy = match FaultProxy::start(env.namesrv()).await {
        Ok(p) => p,
        Err(e) => {
            return Outcome {
                name: "clustering",
                violations: vec![format!("the fault proxy does not start: {e}")],
                summary: String::new(),
                figures: json!({}),
            };
        }
    };
    let dir = std::env::temp_dir().join(rmq_testkit::unique_name("chaos_cl"));
    let _ = fs::create_dir_all(&dir);

    // The schedule: consumer kills spread over the production window, broker kills, one
    // blackhole of CONSUMER_SEND_MSG_BACK. Events run off one 200 ms tick, which also samples
    // the size of every output file (the time of each delivery, to within a tick).
    let mut schedule: Vec<(Duration, Event)> = Vec::new();
    let span_ms = u64::try_from(produce_span.as_millis()).unwrap_or(u64::MAX);
    for _ in 0..consumer_kills {
        let at = rng.range(span_ms / 10, span_ms * 9 / 10);
        schedule.push((Duration::from_millis(at), Event::KillConsumer));
    }
    for i in 0..broker_kills {
        let at = produce_span.mul_f64(0.25 + 0.5 * i as f64 / broker_kills.max(1) as f64);
        schedule.push((at, Event::KillBroker));
    }
    schedule.push((produce_span.mul_f64(0.4), Event::BlackholeOn));
    schedule.push((produce_span.mul_f64(0.4) + blackhole, Event::BlackholeOff));
    schedule.sort_by_key(|(at, _)| *at);
    let mut schedule = std::collections::VecDeque::from(schedule);

    let start = Instant::now();
    let mut incs: Vec<Incarnation> = Vec::new();
    let mut slots: Vec<usize> = Vec::new(); // slot → index into incs
    for s in 0..CONSUMERS {
        let out = dir.join(format!("c{s}-0.txt"));
        incs.push(Incarnation {
            child: spawn_child(proxy.namesrv_addr(), &group, &topic, &out, delay_ms),
            killed: false,
            killed_at: None,
            in_flight: HashSet::new(),
            sizes: Vec::new(),
        });
        slots.push(incs.len() - 1);
    }

    let producer = env.producer().await;
    let sent = Arc::new(AtomicUsize::new(0));
    let producing = tokio::spawn(produce(
        producer.clone(),
        topic.clone(),
        n,
        dead,
        produce_span,
        sent.clone(),
    ));

    // Membership and broker events, for the duplicate check: deliveries shortly before one may
    // come again (a dropped queue's in-flight messages, offsets not yet committed).
    // The group forming at the start is one: its processes join one after another, and each
    // join moves queues (with their in-flight messages) to the newcomer.
    let mut disruptions: Vec<(Duration, Duration)> =
        vec![(Duration::ZERO, Duration::from_secs(10))];
    // Since when the restarted broker waits for every consumer to register again (until then
    // rebalances see a partial group).
    let mut members_pending: Option<Duration> = None;
    let mut kill_in_flight = 0usize;
    let mut kills_done = 0usize;
    let mut broker_kills_done = 0usize;
    let mut blackhole_took = Duration::ZERO;
    let mut blackhole_since = None;
    let mut restarts: Vec<(Duration, usize)> = Vec::new(); // (due, slot)
    let mut broker_task: Option<tokio::task::JoinHandle<Result<(), String>>> = None;
    let mut ticker = tokio::time::interval(Duration::from_millis(200));
    loop {
        ticker.tick().await;
        let now = start.elapsed();
        for inc in incs.iter_mut() {
            let len = fs::metadata(inc.child.out()).map_or(0, |m| m.len());
            inc.sizes.push((now, len));
        }
        if let Some(t) = &broker_task {
            if t.is_finished() {
                if let Some(t) = broker_task.take() {
                    match t.await {
                        Ok(Ok(())) => broker_kills_done += 1,
                        Ok(Err(e)) => violations.push(e),
                        Err(e) => violations.push(e.to_string()),
                    }
                }
                members_pending = disruptions.last().map(|d| d.0);
            }
        }
        if let Some(since) = members_pending {
            let live = CONSUMERS - restarts.len();
            let (env2, group2) = (env.clone(), group.clone());
            let ids = tokio::time::timeout(
                Duration::from_secs(2),
                tokio::spawn(async move { env2.consumer_ids(&group2).await }),
            )
            .await;
            let registered = matches!(&ids, Ok(Ok(ids)) if ids.len() >= live);
            if registered || now > since + Duration::from_secs(120) {
                disruptions.push((since, start.elapsed()));
                members_pending = None;
            }
        }
        while let Some(pos) = restarts.iter().position(|(due, _)| *due <= now) {
            let (_, slot) = restarts.remove(pos);
            let out = dir.join(format!("c{slot}-{}.txt", incs.len()));
            incs.push(Incarnation {
                child: spawn_child(proxy.namesrv_addr(), &group, &topic, &out, delay_ms),
                killed: false,
                killed_at: None,
                in_flight: HashSet::new(),
                sizes: Vec::new(),
            });
            slots[slot] = incs.len() - 1;
            disruptions.push((now, now));
        }
        let mut deferred: Vec<(Duration, Event)> = Vec::new();
        while schedule.front().is_some_and(|(at, _)| *at <= now) {
            let Some((_, event)) = schedule.pop_front() else {
                break;
            };
            match event {
                Event::KillConsumer => {
                    // A slot whose consumer runs (not waiting for its restart).
                    let live: Vec<usize> = (0..CONSUMERS)
                        .filter(|s| !restarts.iter().any(|(_, r)| r == s))
                        .collect();
                    if live.is_empty() {
                        continue;
                    }
                    let slot = live[usize::try_from(rng.range(0, live.len() as u64)).unwrap_or(0)];
                    let idx = slots[slot];
                    incs[idx].child.kill();
                    incs[idx].killed = true;
                    incs[idx].killed_at = Some(start.elapsed());
                    kills_done += 1;
                    disruptions.push((start.elapsed(), start.elapsed()));
                    // What the dead incarnation took beyond the committed offsets comes again.
                    let c = committed(env, &group, &topic).await;
                    let recs = incs[idx].child.records();
                    let flight: HashSet<(i32, i64)> = recs
                        .iter()
                        .filter(|r| r.queue_topic == topic)
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
                    kill_in_flight += flight.len();
                    incs[idx].in_flight = flight;
                    let back = start.elapsed() + Duration::from_millis(rng.range(200, 3000));
                    restarts.push((back, slot));
                }
                Event::KillBroker if broker_task.is_some() || members_pending.is_some() => {
                    // The last broker kill is not over yet: this one comes 5 s later.
                    deferred.push((now + Duration::from_secs(5), Event::KillBroker));
                }
                Event::KillBroker => {
                    disruptions.push((now, now));
                    broker_task = Some(tokio::spawn(async {
                        broker_ctl_async("kill-broker", "broker-a").await?;
                        tokio::time::sleep(Duration::from_secs(2)).await;
                        broker_ctl_async("start-broker", "broker-a").await
                    }));
                }
                Event::BlackholeOn => {
                    proxy.set_rule(RequestCode::CONSUMER_SEND_MSG_BACK, Rule::Drop);
                    blackhole_since = Some(Instant::now());
                }
                Event::BlackholeOff => {
                    proxy.clear_rule(RequestCode::CONSUMER_SEND_MSG_BACK);
                    if let Some(s) = blackhole_since.take() {
                        blackhole_took = s.elapsed();
                    }
                }
            }
        }
        for d in deferred {
            let pos = schedule.partition_point(|(at, _)| *at <= d.0);
            schedule.insert(pos, d);
        }
        if schedule.is_empty()
            && restarts.is_empty()
            && broker_task.is_none()
            && members_pending.is_none()
            && producing.is_finished()
        {
            break;
        }
    }
    let log = match producing.await {
        Ok(l) => l,
        Err(e) => {
            violations.push(format!("the producer task failed: {e}"));
            SendLog::default()
        }
    };
    let _ = producer.shutdown().await;
    let produced_in = start.elapsed();
    let by_id = &log.acked;
    let dead_ids: HashSet<&str> = by_id
        .iter()
        .filter(|(_, seq)| kind_of(**seq, n, dead) == Kind::Dead)
        .map(|(id, _)| id.as_str())
        .collect();

    // Drain: until every acknowledged message was consumed as meant (ok: any delivery; fail: a
    // delivery from the retry topic; dead: in the DLQ), or the drain limit.
    let drain_start = Instant::now();
    let mut dlq: Vec<String> = Vec::new();
    let mut missing: Vec<usize>;
    loop {
        let now = start.elapsed();
        for inc in incs.iter_mut() {
            let len = fs::metadata(inc.child.out()).map_or(0, |m| m.len());
            inc.sizes.push((now, len));
        }
        let all = read_all(&incs);
        let mut done: HashSet<&str> = HashSet::new();
        for (_, r) in all.iter().flatten() {
            if let Some(&seq) = by_id.get(&r.msg_id) {
                let k = kind_of(seq, n, dead);
                if (k == Kind::Ok) || (k == Kind::Fail && r.queue_topic == retry_topic) {
                    done.insert(
                        by_id
                            .get_key_value(&r.msg_id)
                            .map_or("", |(k, _)| k.as_str()),
                    );
                }
            }
        }
        let pending_dead = dead_ids.iter().any(|id| !dlq.iter().any(|d| d == id));
        if pending_dead {
            if let Some(d) = pull_topic(env, &dlq_topic, 1).await {
                dlq = d;
            }
        }
        missing = by_id
            .iter()
            .filter(|(id, _)| !done.contains(id.as_str()) && !dead_ids.contains(id.as_str()))
            .map(|(_, &seq)| seq)
            .collect();
        let dead_missing = dead_ids
            .iter()
            .filter(|id| !dlq.contains(&(**id).to_owned()))
            .count();
        if (missing.is_empty() && dead_missing == 0) || drain_start.elapsed() > drain_limit {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let drained_in = drain_start.elapsed();
    // Stop the consumers cleanly (stdin closes) and give them a moment, then read everything.
    for inc in incs.iter_mut().filter(|i| !i.killed) {
        inc.child.kill();
    }
    let all = read_all(&incs);
    proxy.shutdown().await;

    // Duplicates: a message's first delivery (from the topic, reconsume times 0) seen again. Each
    // repeat is explained when the delivery before it was in flight at a kill of its consumer
    // (beyond the committed offsets) or came at most DISRUPTION_WINDOW before a disruption
    // (consumer start or kill: rebalance; broker kill or restart: offsets not yet flushed) or at
    // most AFTER_DISRUPTION after it (the group changes once the new process has registered and
    // the others have rebalanced: two consumers may hold a queue for a moment).
    const DISRUPTION_WINDOW: Duration = Duration::from_secs(10);
    const AFTER_DISRUPTION: Duration = Duration::from_secs(5);
    let at_risk = |inc: &Incarnation, t: Duration, r: &ChildRecord| {
        (inc.killed && inc.in_flight.contains(&(r.queue_id, r.queue_offset)))
            || disruptions.iter().any(|&(from, to)| {
                t <= to + AFTER_DISRUPTION && from.saturating_sub(t) <= DISRUPTION_WINDOW
            })
    };
    let mut firsts: HashMap<&str, Vec<(Duration, usize, &ChildRecord)>> = HashMap::new();
    let mut deliveries = 0usize;
    let mut unknown = 0usize;
    let mut risky = 0usize;
    for (i, recs) in all.iter().enumerate() {
        for (t, r) in recs {
            deliveries += 1;
            if !by_id.contains_key(&r.msg_id) {
                unknown += 1;
                continue;
            }
            if r.queue_topic == topic && r.reconsume_times == 0 {
                if at_risk(&incs[i], *t, r) {
                    risky += 1;
                }
                firsts
                    .entry(r.msg_id.as_str())
                    .or_default()
                    .push((*t, i, r));
            }
        }
    }
    let mut duplicates = 0usize;
    let mut unexplained: Vec<String> = Vec::new();
    for (id, mut ds) in firsts {
        ds.sort_by_key(|d| d.0);
        for w in ds.windows(2) {
            duplicates += 1;
            let (t, i, r) = w[0];
            if !at_risk(&incs[i], t, r) {
                unexplained.push(format!(
                    "{id} (seq {}) at {:.1} s by consumer process {i}, again at {:.1} s",
                    by_id.get(id).copied().unwrap_or(0),
                    t.as_secs_f64(),
                    w[1].0.as_secs_f64()
                ));
            }
        }
    }
    let bound = risky;
    let dlq_set: HashSet<&str> = dlq.iter().map(String::as_str).collect();
    let dlq_extra: Vec<&str> = dlq_set
        .iter()
        .filter(|id| !dead_ids.contains(**id))
        .copied()
        .collect();
    let dlq_missing = dead_ids.iter().filter(|id| !dlq_set.contains(**id)).count();
    missing.sort_unstable();
    if !missing.is_empty() {
        violations.push(format!(
            "lost {} (first seqs {:?})",
            missing.len(),
            &missing[..missing.len().min(10)]
        ));
    }
    if dlq_missing > 0 || !dlq_extra.is_empty() {
        violations.push(format!(
            "DLQ: {} always-failing messages missing, {} others in it",
            dlq_missing,
            dlq_extra.len()
        ));
    }
    if !unexplained.is_empty() {
        violations.push(format!(
            "{} of {duplicates} duplicate first deliveries not in flight at a kill nor near a \
             disruption, e.g. {}",
            unexplained.len(),
            unexplained[..unexplained.len().min(3)].join(", ")
        ));
    }
    if log.acked.len() != n {
        violations.push(format!("{} of {n} messages acknowledged", log.acked.len()));
    }
    let _ = fs::remove_dir_all(&dir);
    Outcome {
        name: "clustering",
        summary: format!(
            "sent {} lost {} dlq {}/{} dup {duplicates} (bound {bound}) deliveries {deliveries} \
             consumer-kills {kills_done} broker-kills {broker_kills_done} blackhole {:.0} s \
             send-errors {} drained in {:.0} s",
            log.acked.len(),
            missing.len(),
            dlq_set.len(),
            dead_ids.len(),
            blackhole_took.as_secs_f64(),
            log.send_errors,
            drained_in.as_secs_f64()
        ),
        figures: json!({
            "messages": n,
            "acknowledged": log.acked.len(),
            "send_errors": log.send_errors,
            "lost": missing.len(),
            "always_failing": dead_ids.len(),
            "dlq": dlq_set.len(),
            "dlq_missing": dlq_missing,
            "dlq_extra": dlq_extra.len(),
            "deliveries": deliveries,
            "unknown_deliveries": unknown,
            "duplicate_first_deliveries": duplicates,
            "duplicate_bound": bound,
            "in_flight_at_consumer_kills": kill_in_flight,
            "duplicates_unexplained": unexplained.len(),
            "disruptions": disruptions.len(),
            "consumer_kills": kills_done,
            "broker_kills": broker_kills_done,
            "blackhole_seconds": blackhole_took.as_secs_f64(),
            "produce_seconds": produced_in.as_secs_f64(),
            "drain_seconds": drained_in.as_secs_f64(),
            "consumer_processes": CONSUMERS,
            "queues": QUEUES,
            "max_reconsume_times": MAX_RECONSUME,
        }),
        violations,
    }
}

// ---------------------------------------------------------------------------------------------
// Scenario 2: start, consume, shut down a consumer many times in this process.
// ---------------------------------------------------------------------------------------------

fn open_fds() -> usize {
    fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

fn rss_kib() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

async fn restart(env: &Arc<Env>, opts: &Opts) -> Outcome {
    let rounds = if opts.quick { 30 } else { 100 };
    let warmup = 10;
    const PER_ROUND: usize = 5;
    let topic = env.topic("chaos_rs", 4).await;
    let group = rmq_testkit::unique_name("chaos_rs_cg");
    let producer = env.producer().await;
    let mut violations = Vec::new();
    let mut base: Option<(usize, usize, u64)> = None;
    let mut samples = Vec::new();
    let t = Instant::now();
    for round in 0..rounds {
        let rec = Arc::new(Recorder::new());
        let c = consumer::start(
            ConsumerSpec::new(env.namesrv(), &group, &topic),
            consumer::recording(rec.clone(), round, |_, _| false),
        )
        .await;
        let mut ok = true;
        for i in 0..PER_ROUND {
            if producer
                .send(Message::new(&topic, format!("{round}-{i}")))
                .await
                .is_err()
            {
                ok = false;
            }
        }
        let want = if ok { PER_ROUND } else { 0 };
        let waited = tokio::time::timeout(
            Duration::from_secs(30),
            rec.wait_distinct(want, Duration::from_secs(30)),
        )
        .await;
        if waited.is_err() || !ok {
            violations.push(format!("round {round}: the messages were not consumed"));
            let _ = c.shutdown().await;
            break;
        }
        if let Err(e) = c.shutdown().await {
            violations.push(format!("round {round}: shutdown: {e}"));
        }
        drop(c);
        // Let closed sockets and finished tasks settle before sampling.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let tasks = tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks();
        let sample = (open_fds(), tasks, rss_kib());
        samples
            .push(json!({"round": round, "fds": sample.0, "tasks": sample.1, "rss_kib": sample.2}));
        if round + 1 == warmup {
            base = Some(sample);
        }
    }
    let _ = producer.shutdown().await;
    let last = samples.last().cloned().unwrap_or(Value::Null);
    let (fds, tasks, rss) = (
        last["fds"]
            .as_u64()
            .and_then(|v| usize::try_from(v).ok())
            .unwrap_or(0),
        last["tasks"]
            .as_u64()
            .and_then(|v| usize::try_from(v).ok())
            .unwrap_or(0),
        last["rss_kib"].as_u64().unwrap_or(0),
    );
    let (bfds, btasks, brss) = base.unwrap_or((0, 0, 0));
    if base.is_some() {
        if fds > bfds {
            violations.push(format!("file descriptors {bfds} after warm-up → {fds}"));
        }
        if tasks > btasks {
            violations.push(format!("tasks {btasks} after warm-up → {tasks}"));
        }
        if rss * 10 > brss * 11 {
            violations.push(format!("RSS {brss} KiB after warm-up → {rss} KiB (> 10 %)"));
        }
    }
    Outcome {
        name: "restart",
        summary: format!(
            "rounds {} fds {bfds}→{fds} tasks {btasks}→{tasks} rss {brss}→{rss} KiB",
            samples.len()
        ),
        figures: json!({
            "rounds": samples.len(),
            "warmup_rounds": warmup,
            "messages_per_round": PER_ROUND,
            "seconds": t.elapsed().as_secs_f64(),
            "fds_after_warmup": bfds, "fds_end": fds,
            "tasks_after_warmup": btasks, "tasks_end": tasks,
            "rss_kib_after_warmup": brss, "rss_kib_end": rss,
            "samples": samples,
        }),
        violations,
    }
}

// ---------------------------------------------------------------------------------------------
// Scenario 4: sends while one of two brokers is killed.
// ---------------------------------------------------------------------------------------------

async fn producer_failover(env: &Arc<Env>, opts: &Opts, rng: &mut Rng) -> Outcome {
    let n: usize = if opts.quick { 2_000 } else { 20_000 };
    let span = Duration::from_secs(if opts.quick { 20 } else { 60 });
    const IN_FLIGHT: usize = 4;
    let mut violations = Vec::new();
    let b_addr = rmq_testkit::second_broker().await;
    let topic = env.topic("chaos_pf", 4).await;
    if let Err(e) =
        rmq_testkit::admin::create_topic(env.admin.remoting(), env.namesrv(), &b_addr, &topic, 4)
            .await
    {
        violations.push(format!("create {topic} on broker-b: {e}"));
    }
    // Both brokers in the route before the first send.
    let route_ok = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Ok(r) = env.admin.refresh_route(&topic).await {
                if r.route_data().queue_datas.len() >= 2 {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .is_ok();
    if !route_ok {
        violations.push("the topic is not routed on both brokers".into());
    }
    let producer = env.producer().await;
    let kill_at = span.mul_f64(rng.range(25, 50) as f64 / 100.0);
    let start = Instant::now();
    let killer = tokio::spawn(async move {
        tokio::time::sleep(kill_at).await;
        broker_ctl_async("kill-broker", "broker-b").await
    });

    let mut acked: HashMap<String, usize> = HashMap::new();
    let mut acked_on: HashMap<String, usize> = HashMap::new();
    let mut errors = 0usize;
    let mut handed_back = 0usize;
    let mut pending = futures::stream::FuturesUnordered::new();
    let mut next = 0usize;
    use futures::StreamExt;
    loop {
        while pending.len() < IN_FLIGHT && next < n {
            let due = span.mul_f64(next as f64 / n as f64);
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                tokio::time::sleep(wait).await;
            }
            let seq = next;
            next += 1;
            let p = producer.clone();
            let msg = Message::new(&topic, seq.to_string());
            pending.push(async move { (seq, p.send(msg).await) });
        }
        let Some((seq, r)) = pending.next().await else {
            break;
        };
        match r {
            Ok(r) => {
                *acked_on
                    .entry(r.message_queue.broker_name.clone())
                    .or_insert(0) += 1;
                acked.insert(r.msg_id, seq);
            }
            Err(e) => {
                errors += 1;
                let back = match e.unsent() {
                    Some(rmq_producer::Unsent::Message(m)) => {
                        m.body.as_ref() == seq.to_string().as_bytes()
                    }
                    _ => false,
                };
                if back {
                    handed_back += 1;
                } else {
                    violations.push(format!("send {seq} failed without its message: {e}"));
                }
            }
        }
    }
    let sent_in = start.elapsed();
    let _ = producer.shutdown().await;
    match killer.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => violations.push(e),
        Err(e) => violations.push(e.to_string()),
    }
    // broker-b back (same store), then read both brokers' queues.
    if let Err(e) = broker_ctl_async("start-broker", "broker-b").await {
        violations.push(e);
    }
    let stored: HashSet<String> = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            if let Some(ids) = pull_topic(env, &topic, 4).await {
                let set: HashSet<String> = ids.into_iter().collect();
                if acked.keys().all(|id| set.contains(id)) {
                    return set;
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
    .await
    .unwrap_or_default();
    let missing: Vec<usize> = acked
        .iter()
        .filter(|(id, _)| !stored.contains(*id))
        .map(|(_, &s)| s)
        .collect();
    if !missing.is_empty() {
        violations.push(format!("{} acknowledged sends missing", missing.len()));
    }
    if acked.len() + errors != n {
        violations.push(format!(
            "{} acknowledged + {errors} errors != {n} sends",
            acked.len()
        ));
    }
    Outcome {
        name: "producer",
        summary: format!(
            "sends {n} acked {} (per broker {acked_on:?}) errors {errors} (handed back \
             {handed_back}) acked-missing {} kill at {:.0} s",
            acked.len(),
            missing.len(),
            kill_at.as_secs_f64()
        ),
        figures: json!({
            "sends": n,
            "acknowledged": acked.len(),
            "acknowledged_per_broker": acked_on,
            "errors": errors,
            "errors_with_message_handed_back": handed_back,
            "acknowledged_missing": missing.len(),
            "kill_at_seconds": kill_at.as_secs_f64(),
            "send_seconds": sent_in.as_secs_f64(),
        }),
        violations,
    }
}

// ---------------------------------------------------------------------------------------------
// Scenario 3: orderly consumption under consumer kills and rebalances.
// ---------------------------------------------------------------------------------------------

async fn orderly(env: &Arc<Env>, opts: &Opts, rng: &mut Rng) -> Outcome {
    const KEYS: usize = 200;
    const PROCESSES: usize = 2;
    const KILLS: usize = 4;
    let per_key = if opts.quick { 20 } else { 100 };
    let n = KEYS * per_key;
    let span = Duration::from_secs(if opts.quick { 40 } else { 120 });
    // A killed consumer's queue locks expire on the broker after 60 s.
    let drain_limit = Duration::from_secs(if opts.quick { 150 } else { 240 });
    let mut violations = Vec::new();
    let topic = env.topic("chaos_or", QUEUES).await;
    let group = rmq_testkit::unique_name("chaos_or_cg");
    let dir = std::env::temp_dir().join(rmq_testkit::unique_name("chaos_or"));
    let _ = fs::create_dir_all(&dir);
    let start = Instant::now();
    let mut incs: Vec<Incarnation> = Vec::new();
    let mut slots = Vec::new();
    let spawn = |slot: usize, generation: usize| {
        spawn_child_mode(
            env.namesrv(),
            &group,
            &topic,
            &dir.join(format!("o{slot}-{generation}.txt")),
            1,
            ChildMode::Orderly,
        )
    };
    for s in 0..PROCESSES {
        incs.push(Incarnation {
            child: spawn(s, s),
            killed: false,
            killed_at: None,
            in_flight: HashSet::new(),
            sizes: Vec::new(),
        });
        slots.push(s);
    }
    // One sender per queue, its keys' messages in order (key k → queue k % 8, per-key sequence j).
    let producer = env.producer().await;
    let mut senders = Vec::new();
    for q in 0..QUEUES {
        let (producer, topic, env) = (producer.clone(), topic.clone(), env.clone());
        senders.push(tokio::spawn(async move {
            let mut ids: HashMap<String, (usize, usize)> = HashMap::new();
            let mq = env.mq(&topic, q);
            let keys: Vec<usize> = (0..KEYS)
                .filter(|k| usize::try_from(q).is_ok_and(|q| k % 8 == q))
                .collect();
            let total = keys.len() * per_key;
            let t0 = Instant::now();
            let mut i = 0;
            for j in 0..per_key {
                for &k in &keys {
                    let due = span.mul_f64(i as f64 / total as f64);
                    if let Some(w) = due.checked_sub(t0.elapsed()) {
                        tokio::time::sleep(w).await;
                    }
                    i += 1;
                    loop {
                        let msg =
                            Message::new(&topic, format!("{k} {j}")).with_keys([k.to_string()]);
                        match producer.send_to_queue(msg, &mq).await {
                            Ok(r) => {
                                ids.insert(r.msg_id, (k, j));
                                break;
                            }
                            Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
                        }
                    }
                }
            }
            ids
        }));
    }
    let span_ms = u64::try_from(span.as_millis()).unwrap_or(u64::MAX);
    let mut kill_times: Vec<Duration> = (0..KILLS)
        .map(|_| Duration::from_millis(rng.range(span_ms / 8, span_ms * 7 / 8)))
        .collect();
    kill_times.sort();
    let mut kills = std::collections::VecDeque::from(kill_times);
    let mut restarts: Vec<(Duration, usize)> = Vec::new();
    let mut by_id: HashMap<String, (usize, usize)> = HashMap::new();
    let mut ticker = tokio::time::interval(Duration::from_millis(200));
    let mut drain_start: Option<Instant> = None;
    let mut rebalances = 0usize;
    loop {
        ticker.tick().await;
        let now = start.elapsed();
        for inc in incs.iter_mut() {
            let len = fs::metadata(inc.child.out()).map_or(0, |m| m.len());
            inc.sizes.push((now, len));
        }
        while let Some(pos) = restarts.iter().position(|(due, _)| *due <= now) {
            let (_, slot) = restarts.remove(pos);
            let g = incs.len();
            incs.push(Incarnation {
                child: spawn(slot, g),
                killed: false,
                killed_at: None,
                in_flight: HashSet::new(),
                sizes: Vec::new(),
            });
            slots[slot] = g;
            rebalances += 1;
        }
        if kills.front().is_some_and(|t| *t <= now) {
            kills.pop_front();
            let slot = usize::try_from(rng.range(0, PROCESSES as u64)).unwrap_or(0);
            if !restarts.iter().any(|(_, s)| *s == slot) {
                let idx = slots[slot];
                incs[idx].child.kill();
                incs[idx].killed = true;
                incs[idx].killed_at = Some(now);
                rebalances += 1;
                restarts.push((now + Duration::from_millis(rng.range(500, 3000)), slot));
            }
        }
        if drain_start.is_none()
            && senders.iter().all(|s| s.is_finished())
            && kills.is_empty()
            && restarts.is_empty()
        {
            for s in senders.drain(..) {
                match s.await {
                    Ok(ids) => by_id.extend(ids),
                    Err(e) => violations.push(format!("a sender failed: {e}")),
                }
            }
            drain_start = Some(Instant::now());
        }
        if let Some(d) = drain_start {
            let seen: HashSet<String> = read_all(&incs)
                .into_iter()
                .flatten()
                .map(|(_, r)| r.msg_id)
                .collect();
            if by_id.keys().all(|id| seen.contains(id)) || d.elapsed() > drain_limit {
                break;
            }
        }
    }
    let _ = producer.shutdown().await;
    for inc in incs.iter_mut() {
        inc.child.kill();
    }
    // Per key, in time order (then process, then line): each message delivered for the first
    // time must be the next of its key; repeats (after a kill) are counted, not violations.
    let all = read_all(&incs);
    let mut events: Vec<(Duration, usize, usize, usize, usize)> = Vec::new(); // t, inc, line, key, j
    let mut deliveries = 0usize;
    for (i, recs) in all.iter().enumerate() {
        for (line, (t, r)) in recs.iter().enumerate() {
            deliveries += 1;
            if let Some(&(k, j)) = by_id.get(&r.msg_id) {
                events.push((*t, i, line, k, j));
            }
        }
    }
    events.sort();
    let mut next = vec![0usize; KEYS];
    let mut order_violations = 0usize;
    let mut repeats = 0usize;
    let mut examples = Vec::new();
    for &(t, i, _, k, j) in &events {
        if j < next[k] {
            repeats += 1;
        } else if j == next[k] {
            next[k] += 1;
        } else {
            order_violations += 1;
            if examples.len() < 3 {
                examples.push(format!(
                    "key {k}: {j} first delivered at {:.1} s by process {i} before {}",
                    t.as_secs_f64(),
                    next[k]
                ));
            }
            next[k] = j + 1;
        }
    }
    let seen: HashSet<&str> = all
        .iter()
        .flatten()
        .map(|(_, r)| r.msg_id.as_str())
        .collect();
    let lost = by_id
        .keys()
        .filter(|id| !seen.contains(id.as_str()))
        .count();
    if order_violations > 0 {
        violations.push(format!(
            "{order_violations} per-key order violations, e.g. {}",
            examples.join("; ")
        ));
    }
    if lost > 0 {
        violations.push(format!("lost {lost}"));
    }
    if by_id.len() != n {
        violations.push(format!("{} of {n} sends acknowledged", by_id.len()));
    }
    let _ = fs::remove_dir_all(&dir);
    Outcome {
        name: "orderly",
        summary: format!(
            "sent {} keys {KEYS} order-violations {order_violations} lost {lost} repeats {repeats} \
             kills {} rebalances {rebalances} deliveries {deliveries}",
            by_id.len(),
            incs.iter().filter(|i| i.killed_at.is_some()).count()
        ),
        figures: json!({
            "messages": n,
            "acknowledged": by_id.len(),
            "keys": KEYS,
            "processes": PROCESSES,
            "kills": incs.iter().filter(|i| i.killed_at.is_some()).count(),
            "rebalances": rebalances,
            "order_violations": order_violations,
            "lost": lost,
            "repeated_deliveries": repeats,
            "deliveries": deliveries,
            "drain_seconds": drain_start.map_or(0.0, |d| d.elapsed().as_secs_f64()),
        }),
        violations,
    }
}
