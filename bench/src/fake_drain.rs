//! `fake-drain`: the client's ceiling without the broker. The project's fake broker (`rmq-fake`,
//! a name server and a broker on loopback sockets) runs in this process on a runtime of its own
//! (one worker thread, `bench-fake`); N messages are stored into it directly
//! (`FakeBroker::inject`, before the clock starts); then rmq's push consumer or explicit pull
//! consumer drains them on another runtime (`--client-workers`, default one worker thread,
//! `bench-client`): one core for the client, the other for the fake.
//!
//! CPU is counted per thread (`/proc/self/task/*/schedstat`) from the consumer's start to the
//! last message: the `bench-fake` threads are the fake's, every other thread (the client's
//! runtime, the main thread) the client's. Both runtimes keep idle blocking threads for an hour,
//! so no thread that ran during the drain has exited when its time is read.
//!
//! What the fake costs per message is reported beside the client's (`fake_cpu_s`, and the busy
//! share of each side over the drain, `client_util` / `fake_util`): a fake thread busy close to
//! 100 % of the time means the fake, not the client, set the pace.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_client_core::ClientConfig;
use rmq_consumer_push::{ConsumeFrom, PushConsumer};
use rmq_fake::FakeCluster;

use crate::args::Flags;
use crate::drain::{CountingListener, pull_queues};
use crate::error::{BenchError, Result};
use crate::procfs::{split_cpu, thread_cpu};
use crate::stats::{Stats, per_second, result_line};

/// Thread-name prefix of the fake's runtime (a thread's `comm` holds 15 bytes).
const FAKE_THREADS: &str = "bench-fake";
/// Thread name of the client's runtime.
const CLIENT_THREADS: &str = "bench-client";
/// The topic the fake holds.
const TOPIC: &str = "bench_ceiling";

/// A runtime whose threads (workers and blocking) are all called `name`.
fn runtime(name: &str, workers: usize) -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .thread_name(name)
        .thread_keep_alive(Duration::from_secs(3600))
        .enable_all()
        .build()
        .map_err(|e| BenchError::Other(format!("cannot start the {name} runtime: {e}")))
}

fn fake_error(what: &str) -> impl FnOnce(rmq_fake::FakeError) -> BenchError + '_ {
    move |e| BenchError::Other(format!("{what}: {e}"))
}

/// The drain's settings.
#[derive(Debug, Clone)]
struct Settings {
    push: bool,
    count: u64,
    threads: usize,
    batch: i32,
    timeout: Duration,
}

/// `fake-drain --consumer push|pull --count N [--size 1024] [--queues 8] [--threads 20]
/// [--batch 32] [--client-workers 1] [--timeout-s 600]`; runs outside the driver's usual
/// runtime (it builds its own two).
pub(crate) fn fake_drain(flags: &Flags) -> Result<()> {
    let kind: String = flags.get("consumer", "push".to_owned())?;
    let push = match kind.as_str() {
        "push" => true,
        "pull" => false,
        other => {
            return Err(BenchError::Args(format!(
                "--consumer {other}: expected push or pull"
            )));
        }
    };
    let settings = Settings {
        push,
        count: flags.required("count")?,
        threads: flags.get("threads", 20)?,
        batch: flags.get("batch", 32)?,
        timeout: Duration::from_secs(flags.get("timeout-s", 600)?),
    };
    if settings.count == 0 {
        return Err(BenchError::Args("--count must be positive".into()));
    }
    let size: usize = flags.get("size", 1024)?;
    let queues: i32 = flags.get("queues", 8)?;
    let client_workers: usize = flags.get("client-workers", 1)?;

    let fake_rt = runtime(FAKE_THREADS, 1)?;
    let client_rt = runtime(CLIENT_THREADS, client_workers)?;
    let cluster = fake_rt
        .block_on(
            FakeCluster::builder()
                .brokers(1)
                .queues(queues)
                .topic(TOPIC)
                .start(),
        )
        .map_err(fake_error("starting the fake cluster"))?;

    // The messages as rmq's producer sends them (a UNIQ_KEY, WAIT) with what a 5.x broker
    // adds when storing (MSG_REGION, TRACE_ON), spread round-robin over the queues.
    let preload_started = Instant::now();
    let broker = cluster.first_broker();
    let body = crate::produce::body(size);
    let queue_count = u64::try_from(queues.max(1)).unwrap_or(1);
    for i in 0..settings.count {
        let properties = HashMap::from([
            (
                "UNIQ_KEY".to_owned(),
                format!("7F00000100002A9F0000{i:012X}"),
            ),
            ("WAIT".to_owned(), "true".to_owned()),
            ("MSG_REGION".to_owned(), "DefaultRegion".to_owned()),
            ("TRACE_ON".to_owned(), "true".to_owned()),
        ]);
        let queue_id = i32::try_from(i % queue_count).unwrap_or(0);
        broker
            .inject(TOPIC, queue_id, body.clone(), properties)
            .map_err(fake_error("storing a message into the fake"))?;
    }
    let preload_s = preload_started.elapsed().as_secs_f64();

    let namesrv = cluster.namesrv_addr().to_owned();
    let drained = client_rt.block_on(async {
        // Spawned, so that the whole drain runs on the client runtime's workers.
        tokio::spawn(drain(namesrv, settings.clone()))
            .await
            .map_err(|e| BenchError::Other(format!("drain task: {e}")))?
    });
    fake_rt.block_on(cluster.shutdown());
    let mut line = drained?;
    line["preload_s"] = preload_s.into();
    line["queues"] = queues.into();
    line["size"] = size.into();
    line["client_workers"] = client_workers.into();
    println!("{}", result_line(&line));
    Ok(())
}

/// Starts the consumer against the fake's name server, waits for every message, and returns the
/// result object with the CPU split between the client's threads and the fake's.
async fn drain(namesrv: String, s: Settings) -> Result<serde_json::Value> {
    let config = ClientConfig::builder()
        .namesrv_addr(namesrv)
        .instance_name(format!("bench-fake-drain-{}", std::process::id()))
        .build()
        .map_err(|source| BenchError::Client {
            what: "the client config".into(),
            source,
        })?;
    let group = format!("bench_ceiling_{}", std::process::id());
    let stats = Arc::new(Stats::new(s.count, None));
    let (fake_before, client_before) = split_cpu(&thread_cpu(), FAKE_THREADS);
    let started = Instant::now();
    let (client, timed_out, assigned) = if s.push {
        let consumer = PushConsumer::builder()
            .group(group)
            .client_config(config)
            .consume_from(ConsumeFrom::FirstOffset)
            .subscribe(TOPIC, "*")
            .consume_concurrency(s.threads)
            .consume_batch_max_size(1)
            .pull_batch_size(usize::try_from(s.batch).unwrap_or(32))
            .start(CountingListener(stats.clone()))
            .await
            .map_err(|source| BenchError::Consumer {
                what: "starting the push consumer of the fake".into(),
                source: Box::new(source),
            })?;
        let timed_out = stats.wait(s.timeout).await;
        let assigned = consumer.inspect().len();
        let cpu = thread_cpu();
        let _ = tokio::time::timeout(Duration::from_secs(5), consumer.shutdown()).await;
        (("rmq-push-fake", cpu), timed_out, assigned)
    } else {
        let consumer = rmq_consumer_pull::PullConsumer::builder()
            .group(group)
            .client_config(config)
            .pull_timeout(Duration::from_secs(10))
            .start()
            .await
            .map_err(|source| BenchError::PullConsumer {
                what: "starting the pull consumer of the fake".into(),
                source: Box::new(source),
            })?;
        let queues = consumer
            .fetch_subscribe_queues(TOPIC)
            .await
            .map_err(|source| BenchError::PullConsumer {
                what: format!("queues of {TOPIC}"),
                source: Box::new(source),
            })?;
        let assigned = queues.len();
        let timed_out = pull_queues(&consumer, queues, &stats, s.batch, s.timeout).await?;
        let cpu = thread_cpu();
        let _ = tokio::time::timeout(Duration::from_secs(5), consumer.shutdown()).await;
        (("rmq-pull-fake", cpu), timed_out, assigned)
    };
    let window_s = started.elapsed().as_secs_f64();
    let ((name, cpu), count) = (client, stats.count());
    let (fake_after, client_after) = split_cpu(&cpu, FAKE_THREADS);
    let (client_cpu, fake_cpu) = (client_after - client_before, fake_after - fake_before);
    let elapsed = stats.elapsed_s();
    let rate = per_second(count, elapsed);
    let mut line = stats.result(name, started, timed_out);
    line["msgs_per_s"] = rate.into();
    line["assigned_queues"] = assigned.into();
    line["window_s"] = window_s.into();
    line["client_cpu_s"] = client_cpu.into();
    line["fake_cpu_s"] = fake_cpu.into();
    line["client_util"] = (client_cpu / window_s).into();
    line["fake_util"] = (fake_cpu / window_s).into();
    Ok(line)
}
