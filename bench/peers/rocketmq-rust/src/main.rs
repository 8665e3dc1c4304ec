//! Drain / latency peer on the `rocketmq-client-rust` crate's push consumer, for bench/run.sh.
//!
//! Usage: rocketmq-rust-peer --namesrv ADDR --topic T --group G --expect N
//!            [--threads 20] [--batch 32] [--latency-skip K] [--timeout-s 600]
//!
//! Prints `READY` once the consumer started and one `RESULT {json}` line at the end
//! (same protocol as the Java and Go peers; see bench/README.md).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rocketmq_client_rust::{
    ClientRuntime, ClientRuntimeConfig, ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus,
    DefaultMQPushConsumer, MQPushConsumer, MessageListenerConcurrently,
};
use rocketmq_model::common::consumer::consume_from_where::ConsumeFromWhere;
use rocketmq_model::common::message::message_ext::MessageExt;
use rocketmq_runtime::{RuntimeConfig, RuntimeOwner};

struct Args {
    namesrv: String,
    topic: String,
    group: String,
    expect: u64,
    threads: u32,
    batch: u32,
    /// Record latency for messages whose sequence number is >= this (None = no latency).
    latency_skip: Option<u64>,
    timeout: Duration,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        namesrv: std::env::var("NAMESRV_ADDR").unwrap_or_else(|_| "127.0.0.1:9876".into()),
        topic: String::new(),
        group: String::new(),
        expect: 0,
        threads: 20,
        batch: 32,
        latency_skip: None,
        timeout: Duration::from_secs(600),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let val = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let num = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--namesrv" => a.namesrv = val,
            "--topic" => a.topic = val,
            "--group" => a.group = val,
            "--expect" => a.expect = num(&val)?,
            "--threads" => a.threads = num(&val)? as u32,
            "--batch" => a.batch = num(&val)? as u32,
            "--latency-skip" => a.latency_skip = Some(num(&val)?),
            "--timeout-s" => a.timeout = Duration::from_secs(num(&val)?),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if a.topic.is_empty() || a.group.is_empty() || a.expect == 0 {
        return Err("--topic, --group and --expect are required".into());
    }
    Ok(a)
}

#[derive(Default)]
struct Times {
    first: Option<Instant>,
    last: Option<Instant>,
}

struct Stats {
    count: AtomicU64,
    expect: u64,
    latency_skip: Option<u64>,
    times: Mutex<Times>,
    latencies_us: Mutex<Vec<u64>>,
    done: tokio::sync::Notify,
}

struct Listener(Arc<Stats>);

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

impl MessageListenerConcurrently for Listener {
    fn consume_message(
        &self,
        msgs: &[&MessageExt],
        _ctx: &ConsumeConcurrentlyContext,
    ) -> rocketmq_client_rust::ClientResult<ConsumeConcurrentlyStatus> {
        let s = &self.0;
        let now = Instant::now();
        if let Some(skip) = s.latency_skip {
            let recv = now_us();
            let mut lat = s.latencies_us.lock().unwrap_or_else(|e| e.into_inner());
            for m in msgs {
                if let Some(body) = m.body() {
                    if body.len() >= 16 {
                        let sent = u64::from_be_bytes(body[0..8].try_into().unwrap_or([0; 8]));
                        let seq = u64::from_be_bytes(body[8..16].try_into().unwrap_or([0; 8]));
                        if seq >= skip {
                            lat.push(recv.saturating_sub(sent));
                        }
                    }
                }
            }
        }
        {
            let mut t = s.times.lock().unwrap_or_else(|e| e.into_inner());
            if t.first.is_none() {
                t.first = Some(now);
            }
            t.last = Some(now);
        }
        let n = msgs.len() as u64;
        let before = s.count.fetch_add(n, Ordering::AcqRel);
        if before < s.expect && before + n >= s.expect {
            s.done.notify_one();
        }
        Ok(ConsumeConcurrentlyStatus::ConsumeSuccess)
    }
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[idx] as f64 / 1000.0
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("rocketmq-rust-peer: {e}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| {
            eprintln!("rocketmq-rust-peer: tokio runtime: {e}");
            std::process::exit(1)
        });
    if let Err(e) = rt.block_on(run(args)) {
        eprintln!("rocketmq-rust-peer: {e}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> Result<(), String> {
    // The crate runs listener calls on its runtime's "metadata-io" blocking lane. Its default
    // size on 2 cores (4 concurrent calls, 16 queued) rejects most calls of a 20-thread consumer
    // ("runtime.capacity.exhausted" -> consumeMessage returns null -> redelivery). Size the lane
    // like Java's consume pool: `threads` concurrent calls and a deep queue.
    let parallelism = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    let mut runtime_config = RuntimeConfig::for_parallelism("rocketmq-rust-peer", parallelism)
        .with_max_blocking_threads((args.threads as usize + 16).min(512))
        .map_err(|e| format!("runtime config: {e}"))?;
    runtime_config.blocking_lane_policies.metadata_io.max_concurrency = args.threads as usize;
    runtime_config.blocking_lane_policies.metadata_io.max_queue_depth = 65_536;
    let owner = RuntimeOwner::plan(runtime_config)
    .map_err(|e| format!("runtime plan: {e}"))?
    .build()
    .map_err(|e| format!("runtime build: {e}"))?;
    let mut telemetry_cfg = rocketmq_observability::TelemetryBootstrapConfig::default();
    telemetry_cfg.logging.filter = "warn".to_string();
    let telemetry = rocketmq_observability::install_global(&telemetry_cfg)
        .map_err(|e| format!("telemetry: {e}"))?;
    let client_runtime: Arc<ClientRuntime> = ClientRuntime::try_new(
        owner.root_context().component("client"),
        ClientRuntimeConfig::default(),
        telemetry.handle(),
    )
    .map_err(|e| format!("client runtime: {e}"))?;

    let stats = Arc::new(Stats {
        count: AtomicU64::new(0),
        expect: args.expect,
        latency_skip: args.latency_skip,
        times: Mutex::new(Times::default()),
        latencies_us: Mutex::new(Vec::new()),
        done: tokio::sync::Notify::new(),
    });

    let mut consumer = DefaultMQPushConsumer::builder(client_runtime.clone())
        .consumer_group(args.group.clone())
        .name_server_addr(args.namesrv.clone())
        .consume_from_where(ConsumeFromWhere::ConsumeFromFirstOffset)
        .consume_thread_min(args.threads)
        .consume_thread_max(args.threads)
        .pull_batch_size(args.batch)
        .consume_message_batch_max_size(1)
        .build();
    consumer
        .subscribe(args.topic.clone(), "*")
        .await
        .map_err(|e| format!("subscribe: {e}"))?;
    consumer.register_message_listener_concurrently(Listener(stats.clone()));
    let started = Instant::now();
    consumer.start().await.map_err(|e| format!("start: {e}"))?;
    println!("READY");

    let timed_out = tokio::time::timeout(args.timeout, async {
        while stats.count.load(Ordering::Acquire) < args.expect {
            // notify_one stores a permit, so a notification before this wait is not lost;
            // the 1 s tick only guards against anything unexpected.
            let _ = tokio::time::timeout(Duration::from_secs(1), stats.done.notified()).await;
        }
    })
    .await
    .is_err();

    let count = stats.count.load(Ordering::Acquire);
    let (first, last) = {
        let t = stats.times.lock().unwrap_or_else(|e| e.into_inner());
        (t.first, t.last)
    };
    let elapsed = match (first, last) {
        (Some(f), Some(l)) => l.duration_since(f).as_secs_f64(),
        _ => 0.0,
    };
    let startup = first.map(|f| f.duration_since(started).as_secs_f64()).unwrap_or(0.0);
    let mut lat = std::mem::take(&mut *stats.latencies_us.lock().unwrap_or_else(|e| e.into_inner()));
    lat.sort_unstable();
    println!(
        "RESULT {{\"client\":\"rocketmq-rust-push\",\"count\":{count},\"elapsed_s\":{elapsed:.6},\"startup_s\":{startup:.6},\"timeout\":{timed_out},\"latency_samples\":{},\"p50_ms\":{:.3},\"p99_ms\":{:.3},\"p999_ms\":{:.3}}}",
        lat.len(),
        percentile(&lat, 0.50),
        percentile(&lat, 0.99),
        percentile(&lat, 0.999)
    );
    // Leave without a graceful shutdown: the figures are printed, and the runner measures
    // the process until exit (a slow shutdown would only add constant time to every client).
    let _ = tokio::time::timeout(Duration::from_secs(5), consumer.shutdown()).await;
    std::process::exit(0);
}
