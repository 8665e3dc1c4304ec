//! Producer-side modes: `preload`, `produce` (sync / async throughput) and
//! `latency-produce` (fixed rate, bodies carrying the send time).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use rmq_producer::{
    Batching, Message, Producer, TransactionProducer, TransactionState, UnsentExt, transaction_fn,
};
use tokio::sync::Semaphore;

use crate::args::Flags;
use crate::error::{BenchError, Result};
use serde_json::json;

use crate::stats::{LatencyHistogram, now_us, per_second, result_line};

/// A body of `size` bytes (printable, not compressible to nothing).
pub(crate) fn body(size: usize) -> Bytes {
    let mut b = BytesMut::with_capacity(size);
    for i in 0..size {
        // 'a'..='z' repeating, shifted every 26 bytes: stable, cheap.
        let c = u8::try_from((i + i / 26) % 26).unwrap_or(0);
        b.put_u8(b'a' + c);
    }
    b.freeze()
}

/// A started producer; with `--endpoint HOST:PORT` one of the RocketMQ 5.x proxy (gRPC) instead of
/// the brokers (remoting).
async fn start_producer(flags: &Flags, name: &str) -> Result<Producer> {
    let mut builder = Producer::builder()
        .group(format!("{name}_{}", std::process::id()))
        .client_config(flags.client_config(None)?)
        // As the Java benchmark Producer: never compress.
        .compress_over(usize::MAX);
    if let Some(endpoint) = flags.optional::<String>("endpoint")? {
        builder = builder.endpoint(endpoint);
    }
    if let Some(b) = batching(flags)? {
        builder = builder.batching(b.linger, b.max_messages, b.max_bytes);
    }
    builder
        .start()
        .await
        .map_err(|source| BenchError::Producer {
            what: "starting the producer".into(),
            source,
        })
}

/// Auto-batching of `produce --batching 1 [--linger-ms 5] [--batch-messages 32]
/// [--batch-bytes 262144]`: concurrent sends of a topic grouped into SEND_BATCH_MESSAGE
/// (`ProducerBuilder::batching`); `None` without `--batching 1`.
fn batching(flags: &Flags) -> Result<Option<Batching>> {
    if flags.get::<u8>("batching", 0)? != 1 {
        return Ok(None);
    }
    Ok(Some(Batching::new(
        Duration::from_millis(flags.get("linger-ms", DEFAULT_LINGER_MS)?),
        flags.get("batch-messages", DEFAULT_BATCH_MESSAGES)?,
        flags.get("batch-bytes", DEFAULT_BATCH_BYTES)?,
    )))
}

/// Defaults of `produce --batching 1` (bench/run.sh's `--batch-linger-ms`,
/// `--batch-messages`, `--batch-bytes`): 1 000 sends in flight fill a batch of 32 long before
/// the linger time is up, so batches go out full.
const DEFAULT_LINGER_MS: u64 = 5;
const DEFAULT_BATCH_MESSAGES: usize = 32;
const DEFAULT_BATCH_BYTES: usize = 256 * 1024;

/// `preload --topic T[,T2...] --count N --size S [--batch 32] [--tasks 8]`: N messages,
/// sent in batches (SEND_BATCH_MESSAGE) by `tasks` concurrent loops; with several topics,
/// batch i goes to topic i mod their number.
pub(crate) async fn preload(flags: &Flags) -> Result<()> {
    let topics = Arc::new(crate::topic::topics(flags)?);
    let count: u64 = flags.required("count")?;
    let size: usize = flags.get("size", 1024)?;
    let batch: u64 = flags.get("batch", 32u64)?.max(1);
    let tasks: u64 = flags.get("tasks", 8u64)?.max(1);
    let producer = start_producer(flags, "bench_preload").await?;
    let body = body(size);
    let started = Instant::now();
    let sender = producer.clone();
    claim_loops(tasks, count, batch, "preload", move |from| {
        let (producer, topics, body) = (sender.clone(), topics.clone(), body.clone());
        async move {
            let which = usize::try_from(from / batch).unwrap_or(0) % topics.len();
            let topic = &topics[which];
            let n = batch.min(count - from);
            let mut msgs: Vec<Message> = (0..n)
                .map(|_| Message::new(topic.as_str(), body.clone()))
                .collect();
            let mut tries = 0;
            loop {
                match producer.send_batch(msgs).await {
                    Ok(_) => return Ok(()),
                    Err(e) if tries < 5 => {
                        tries += 1;
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        msgs = match e.into_unsent() {
                            Some(rmq_producer::Unsent::Batch(b)) => b,
                            _ => (0..n)
                                .map(|_| Message::new(topic.as_str(), body.clone()))
                                .collect(),
                        };
                    }
                    Err(source) => {
                        return Err(BenchError::Producer {
                            what: format!("preloading {topic}"),
                            source,
                        });
                    }
                }
            }
        }
    })
    .await?;
    let elapsed = started.elapsed().as_secs_f64();
    let _ = producer.shutdown().await;
    println!(
        "{}",
        result_line(&json!({"client": "rmq-producer", "count": count, "elapsed_s": elapsed}))
    );
    Ok(())
}

/// A transactional producer whose local transactions commit at once: what
/// `--mode tx` measures is the protocol (half message, END_TRANSACTION).
async fn start_tx_producer(flags: &Flags) -> Result<TransactionProducer> {
    Producer::builder()
        .group(format!("bench_produce_tx_{}", std::process::id()))
        .namesrv_addr(flags.namesrv())
        .compress_over(usize::MAX)
        .transaction_listener(transaction_fn(
            |_, ()| Box::pin(async { TransactionState::Commit }),
            |_| Box::pin(async { TransactionState::Commit }),
        ))
        .start()
        .await
        .map_err(|source| BenchError::Producer {
            what: "starting the transactional producer".into(),
            source,
        })
}

/// `tasks` loops claiming `step` of `count` items at a time from a shared
/// counter until every item is claimed; `work` gets the first item of each
/// claim. The first error ends the run (`what` names the loops in a panic).
pub(crate) async fn claim_loops<F, Fut>(
    tasks: u64,
    count: u64,
    step: u64,
    what: &'static str,
    work: F,
) -> Result<()>
where
    F: Fn(u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send,
{
    let next = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let (work, next) = (work.clone(), next.clone());
        handles.push(tokio::spawn(async move {
            loop {
                let from = next.fetch_add(step, Ordering::AcqRel);
                if from >= count {
                    return Ok::<(), BenchError>(());
                }
                work(from).await?;
            }
        }));
    }
    for h in handles {
        h.await
            .map_err(|e| BenchError::Other(format!("{what} task: {e}")))??;
    }
    Ok(())
}

/// `tasks` loops sharing `count` sends, each awaiting its answer (`send`
/// tells whether it succeeded).
async fn send_loops<F, Fut>(
    tasks: u64,
    count: u64,
    ok: &Arc<AtomicU64>,
    failed: &Arc<AtomicU64>,
    send: F,
) -> Result<()>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = bool> + Send,
{
    let mut handles = Vec::new();
    for t in 0..tasks {
        let share = count / tasks + u64::from(t < count % tasks);
        let (send, ok, failed) = (send.clone(), ok.clone(), failed.clone());
        handles.push(tokio::spawn(async move {
            for _ in 0..share {
                let counter = if send().await { &ok } else { &failed };
                counter.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for h in handles {
        h.await
            .map_err(|e| BenchError::Other(format!("send task: {e}")))?;
    }
    Ok(())
}

/// `produce --topic T --count N --size S --mode sync|async|tx [--tasks 64] [--inflight 1000]
/// [--endpoint HOST:PORT] [--batching 1 [--linger-ms 5] [--batch-messages 32] [--batch-bytes 262144]]`.
///
/// sync: `tasks` loops each `send` N/tasks messages and wait for each answer
/// (the Java benchmark Producer's `-w` threads). tx: the same loops with
/// `send_in_transaction` (half message, a local transaction that commits at
/// once, END_TRANSACTION) on a transactional producer. async: one loop hands every
/// message to `send_with_callback`, with at most `inflight` sends pending (the
/// Java benchmark's async mode: one thread and callbacks; it backs off above
/// 10 000 queued sends, which on 2 cores makes the Java client's sends time
/// out, so the harness uses 1 000 for both clients). With `--endpoint`, sync and async go
/// through the RocketMQ 5.x proxy at that gRPC address (the same `send` / `send_with_callback`;
/// the result line names the client `rmq-grpc`). With `--batching 1` (sync or async) the producer
/// groups the concurrent sends into SEND_BATCH_MESSAGE (`ProducerBuilder::batching`); the result
/// line names the client `rmq-producer-batching`.
pub(crate) async fn produce(flags: &Flags) -> Result<()> {
    let topic: String = flags.required("topic")?;
    let count: u64 = flags.required("count")?;
    let size: usize = flags.get("size", 1024)?;
    let mode: String = flags.get("mode", "sync".to_owned())?;
    let tasks: u64 = flags.get("tasks", 64u64)?.max(1);
    let inflight: usize = flags.get("inflight", 1_000usize)?.max(1);
    let grpc = flags.optional::<String>("endpoint")?.is_some();
    if grpc && mode == "tx" {
        return Err(BenchError::Args(
            "--mode tx measures the remoting transactional producer; it takes no --endpoint".into(),
        ));
    }
    let batched = batching(flags)?.is_some();
    if batched && (grpc || mode == "tx") {
        return Err(BenchError::Args(
            "--batching 1 measures the remoting producer's auto-batching of concurrent sends \
             (--mode sync or async, no --endpoint)"
                .into(),
        ));
    }
    let client = match (grpc, batched) {
        (true, _) => "rmq-grpc",
        (false, true) => "rmq-producer-batching",
        (false, false) => "rmq-producer",
    };
    let ok = Arc::new(AtomicU64::new(0));
    // msgs_per_s = successes / (first send .. last answer). For reference, also
    // the Java benchmark Producer's way ("Send TPS"): a snapshot of the success
    // count every second (the timer starts before the producer), the rate over
    // the last ten snapshots.
    let snapshots = Arc::new(std::sync::Mutex::new(Vec::<(Instant, u64)>::new()));
    let sampler = {
        let (ok, snapshots) = (ok.clone(), snapshots.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval_at(
                tokio::time::Instant::now() + Duration::from_secs(1),
                Duration::from_secs(1),
            );
            loop {
                tick.tick().await;
                let mut s = snapshots
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                s.push((Instant::now(), ok.load(Ordering::Relaxed)));
                if s.len() > 10 {
                    s.remove(0);
                }
            }
        })
    };
    let (producer, tx) = if mode == "tx" {
        let tx = start_tx_producer(flags).await?;
        (tx.producer().clone(), Some(tx))
    } else {
        (start_producer(flags, "bench_produce").await?, None)
    };
    let body = body(size);
    let failed = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    match mode.as_str() {
        "tx" => {
            let Some(tx) = tx.clone() else {
                return Err(BenchError::Other("no transactional producer".into()));
            };
            let (topic, body) = (topic.clone(), body.clone());
            send_loops(tasks, count, &ok, &failed, move || {
                let (tx, msg) = (tx.clone(), Message::new(topic.clone(), body.clone()));
                async move {
                    matches!(
                        tx.send_in_transaction(msg, ()).await,
                        Ok((_, TransactionState::Commit))
                    )
                }
            })
            .await?;
        }
        "sync" => {
            let (producer, topic, body) = (producer.clone(), topic.clone(), body.clone());
            send_loops(tasks, count, &ok, &failed, move || {
                let (producer, msg) = (producer.clone(), Message::new(topic.clone(), body.clone()));
                async move { producer.send(msg).await.is_ok() }
            })
            .await?;
        }
        "async" => {
            // The loop runs in a task, on the runtime's workers, as a service's handlers
            // would send; on the thread that started the runtime (`block_on`) every answer
            // releasing a permit would have to wake that thread from another one.
            let (producer, topic, body) = (producer.clone(), topic.clone(), body.clone());
            let (ok, failed) = (ok.clone(), failed.clone());
            tokio::spawn(async move {
                let permits = Arc::new(Semaphore::new(inflight));
                for _ in 0..count {
                    let permit = permits
                        .clone()
                        .acquire_owned()
                        .await
                        .map_err(|e| BenchError::Other(format!("semaphore: {e}")))?;
                    let (ok, failed) = (ok.clone(), failed.clone());
                    let msg = Message::new(topic.clone(), body.clone());
                    producer.send_with_callback(msg, move |r| {
                        match r {
                            Ok(_) => ok.fetch_add(1, Ordering::Relaxed),
                            Err(_) => failed.fetch_add(1, Ordering::Relaxed),
                        };
                        drop(permit);
                    });
                }
                // All sends have been handed over; wait for the last answers.
                let all = u32::try_from(inflight).unwrap_or(u32::MAX);
                let _ = permits
                    .acquire_many(all)
                    .await
                    .map_err(|e| BenchError::Other(format!("semaphore: {e}")))?;
                Ok::<(), BenchError>(())
            })
            .await
            .map_err(|e| BenchError::Other(format!("async send loop: {e}")))??;
        }
        other => {
            return Err(BenchError::Args(format!(
                "--mode {other}: expected sync, async or tx"
            )));
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    sampler.abort();
    // Best effort at the end of a run: every step is logged.
    let _ = match tx {
        Some(tx) => tx.shutdown().await,
        None => producer.shutdown().await,
    };
    let ok = ok.load(Ordering::Relaxed);
    let overall = per_second(ok, elapsed);
    let windowed = {
        let s = snapshots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match (s.first(), s.last()) {
            (Some(&(t0, n0)), Some(&(t1, n1))) if s.len() >= 2 && n1 > n0 => {
                #[allow(clippy::cast_precision_loss)]
                let r = (n1 - n0) as f64 / t1.duration_since(t0).as_secs_f64();
                r
            }
            _ => overall,
        }
    };
    let line = json!({
        "client": client,
        "mode": mode,
        "count": ok,
        "failed": failed.load(Ordering::Relaxed),
        "elapsed_s": elapsed,
        "msgs_per_s": overall,
        "windowed_msgs_per_s": windowed,
    });
    println!("{}", result_line(&line));
    Ok(())
}

/// `latency-produce --topic T --rate R --duration-s D [--warmup-s W] [--size S]`:
/// sends R msg/s for W + D seconds (message i at start + i/R). Each body
/// starts with the send time (µs since the epoch, BE u64) and the sequence
/// number (BE u64); consumers skip the first R×W messages (warm-up).
///
/// The result has the achieved rate (`msgs_per_s`: sends issued over the time
/// it took to issue them, and `acked_msgs_per_s`: successful sends up to the
/// last answer) and
/// the time from a send to its answer (`ack_*_ms`, measured messages only): a
/// producer or broker that falls behind the rate shows there, not as
/// consumer latency.
pub(crate) async fn latency_produce(flags: &Flags) -> Result<()> {
    let topic: String = flags.required("topic")?;
    let rate: u64 = flags.get("rate", 5000u64)?.max(1);
    let duration: u64 = flags.get("duration-s", 30)?;
    let warmup: u64 = flags.get("warmup-s", 2)?;
    let size: usize = flags.get("size", 1024usize)?.max(16);
    let total = rate.saturating_mul(duration.saturating_add(warmup));
    let skip = rate.saturating_mul(warmup);
    let producer = start_producer(flags, "bench_latency").await?;
    let padding = body(size - 16);
    let failed = Arc::new(AtomicU64::new(0));
    let acks = Arc::new(Mutex::new(Acks {
        us: LatencyHistogram::new(),
        ok: 0,
        last: None,
    }));
    let started = Instant::now();
    let mut sent = 0u64;
    while sent < total {
        let elapsed_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let due = (elapsed_us.saturating_mul(rate) / 1_000_000)
            .saturating_add(1)
            .min(total);
        while sent < due {
            let mut b = BytesMut::with_capacity(size);
            let sent_us = now_us();
            b.put_u64(sent_us);
            b.put_u64(sent);
            b.put_slice(&padding);
            let failed = failed.clone();
            let acks = acks.clone();
            let measured = sent >= skip;
            producer.send_with_callback(Message::new(topic.clone(), b.freeze()), move |r| {
                if let Err(e) = r {
                    // The first failure says why (the harness shows it).
                    if failed.fetch_add(1, Ordering::Relaxed) == 0 {
                        eprintln!("latency-produce: a send failed: {e}");
                    }
                    return;
                }
                let mut a = acks.lock().unwrap_or_else(PoisonError::into_inner);
                a.ok += 1;
                a.last = Some(Instant::now());
                if measured {
                    a.us.record(now_us().saturating_sub(sent_us));
                }
            });
            sent += 1;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let _ = producer.shutdown().await;
    let a = acks.lock().unwrap_or_else(PoisonError::into_inner);
    let acked_s = a
        .last
        .map_or(0.0, |l| l.duration_since(started).as_secs_f64());
    let line = json!({
        "client": "rmq-producer",
        "count": sent,
        "failed": failed.load(Ordering::Relaxed),
        "elapsed_s": elapsed,
        "skip": skip,
        "msgs_per_s": per_second(sent, elapsed),
        "acked_msgs_per_s": per_second(a.ok, acked_s),
        "ack_samples": a.us.len(),
        "ack_p50_ms": a.us.percentile_ms(0.50),
        "ack_p99_ms": a.us.percentile_ms(0.99),
        "ack_max_ms": a.us.max_ms(),
    });
    println!("{}", result_line(&line));
    Ok(())
}

/// The answers of `latency-produce`'s sends: send-to-answer times, successes and the last answer.
#[derive(Debug)]
struct Acks {
    us: LatencyHistogram,
    ok: u64,
    last: Option<Instant>,
}
