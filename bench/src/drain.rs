//! Consumer-side modes: `drain-push` (rmq's PushConsumer, also used for the
//! latency runs), `drain-pull` (the explicit `PullConsumer`, per queue) and
//! `raw-pull` (rmq-remoting PULL_MESSAGE loop per queue counting
//! stored records without decoding them: the broker-bound ceiling).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rmq_client_core::{ClientInstance, PullStatus};
use rmq_consumer_push::{
    ConsumeContext, ConsumeFrom, ConsumeResult, MessageExt, MessageListener, PushConsumer,
    async_trait,
};
use rmq_protocol::header::{PullMessageRequestHeader, PullMessageResponseHeader, pull_sys_flag};
use rmq_protocol::{MessageQueue, RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::{ClientOptions, RemotingClient};

use crate::args::Flags;
use crate::error::{BenchError, Result};
use crate::stats::{Stats, now_us};
use crate::topic::instance;

/// Common flags of the drain modes.
#[derive(Debug)]
struct DrainArgs {
    topic: String,
    group: String,
    expect: u64,
    threads: usize,
    batch: i32,
    latency_skip: Option<u64>,
    timeout: Duration,
}

impl DrainArgs {
    fn parse(flags: &Flags) -> Result<Self> {
        let expect: u64 = flags.required("expect")?;
        if expect == 0 {
            return Err(BenchError::Args("--expect must be positive".into()));
        }
        Ok(DrainArgs {
            topic: flags.required("topic")?,
            group: flags.required("group")?,
            expect,
            threads: flags.get("threads", 20)?,
            batch: flags.get("batch", 32)?,
            latency_skip: flags.optional("latency-skip")?,
            timeout: Duration::from_secs(flags.get("timeout-s", 600)?),
        })
    }
}

/// The no-op listener of every push mode: counts (and with `--latency-skip` times) the messages.
#[derive(Debug)]
pub(crate) struct CountingListener(pub(crate) Arc<Stats>);

#[async_trait]
impl MessageListener for CountingListener {
    async fn consume(&self, msgs: &[MessageExt], _ctx: &mut ConsumeContext) -> ConsumeResult {
        if self.0.wants_latency() {
            self.0
                .record_latency(now_us(), msgs.iter().map(|m| m.body.as_ref()));
            self.0.record_store_delay(
                msgs.iter()
                    .map(|m| (m.store_timestamp, m.born_timestamp, m.body.as_ref())),
            );
        }
        self.0.add(u64::try_from(msgs.len()).unwrap_or(u64::MAX));
        ConsumeResult::Success
    }
}

/// `drain-push --topic T --group G --expect N [--threads 20] [--batch 32]
/// [--latency-skip K] [--timeout-s 600] [--pop 1] [--metrics-recorder prometheus]
/// [--trace 1] [--endpoint HOST:PORT]`: rmq's PushConsumer, fresh group,
/// first offset, no-op listener; `--pop 1`: in pop mode (RocketMQ 5);
/// `--trace 1`: with RocketMQ message trace on (SubBefore/SubAfter records to
/// `RMQ_SYS_TRACE_TOPIC`); `--endpoint`: through the RocketMQ 5.x proxy at
/// that gRPC endpoint (where it starts is the proxy's choice).
pub(crate) async fn drain_push(flags: &Flags) -> Result<()> {
    let a = DrainArgs::parse(flags)?;
    let pop = flags.get::<u8>("pop", 0)? == 1;
    let trace = flags.get::<u8>("trace", 0)? == 1;
    match flags.optional::<String>("metrics-recorder")?.as_deref() {
        None | Some("none") => {}
        Some("prometheus") => metrics_exporter_prometheus::PrometheusBuilder::new()
            .install_recorder()
            .map(drop)
            .map_err(|e| {
                BenchError::Args(format!("cannot install the Prometheus recorder: {e}"))
            })?,
        Some(other) => {
            return Err(BenchError::Args(format!(
                "--metrics-recorder {other}: expected none or prometheus"
            )));
        }
    }
    let stats = Arc::new(Stats::new(a.expect, a.latency_skip));
    let started = Instant::now();
    let topics = crate::topic::topics(flags)?;
    let consumer = start_push(flags, &a, &topics, pop, trace, stats.clone()).await?;
    println!("READY");
    let timed_out = stats.wait(a.timeout).await;
    let client = match (flags.optional::<String>("endpoint")?, pop) {
        (Some(_), _) => "rmq-grpc-push",
        (None, true) => "rmq-pop-push",
        (None, false) => "rmq-push",
    };
    let mut result = stats.result(client, started, timed_out);
    // What the scale scenario reports beside the drain figures: the queues this consumer holds
    // (one pull loop each) and the process's threads, at the end of the drain.
    result["assigned_queues"] = consumer.inspect().len().into();
    result["threads"] = crate::procfs::threads().into();
    println!("{}", crate::stats::result_line(&result));
    let _ = tokio::time::timeout(Duration::from_secs(5), consumer.shutdown()).await;
    Ok(())
}

/// rmq's PushConsumer as every push mode of the driver starts it: fresh group `a.group`, first
/// offset, every topic of `topics` subscribed with `*`, `a.threads` concurrent listener calls of
/// one message, pull batch `a.batch`. With `--endpoint`, through the RocketMQ 5.x proxy (the start
/// offset, pop mode and trace are then the proxy's).
async fn start_push(
    flags: &Flags,
    a: &DrainArgs,
    topics: &[String],
    pop: bool,
    trace: bool,
    stats: Arc<Stats>,
) -> Result<PushConsumer> {
    let mut builder = PushConsumer::builder().group(a.group.clone());
    builder = match flags.optional::<String>("endpoint")? {
        Some(e) => builder.endpoint(e),
        None => builder
            .client_config(flags.client_config(None)?)
            .consume_from(ConsumeFrom::FirstOffset)
            .pop_mode(pop)
            .enable_trace(trace),
    };
    for topic in topics {
        builder = builder.subscribe(topic.clone(), "*");
    }
    builder
        .consume_concurrency(a.threads)
        .consume_batch_max_size(1)
        .pull_batch_size(usize::try_from(a.batch).unwrap_or(32))
        .start(CountingListener(stats))
        .await
        .map_err(|source| BenchError::Consumer {
            what: format!("starting the push consumer of {}", topics.join(",")),
            source: Box::new(source),
        })
}

/// `idle-push --topic T[,T2...] --group G --expect-queues Q [--idle-s 5] [--threads 20]
/// [--batch 32]`: rmq's PushConsumer (as `drain-push` starts it) on empty topics: once it holds
/// all Q queues of the topics (each with its pull loop and a held long poll at the broker; the
/// group's retry queues come on top, in `assigned_queues`) and `idle-s`
/// seconds passed, the resident set (`VmRSS`, the median of 5 readings 200 ms apart), the
/// thread count and the CPU seconds spent while idle. `bench/run.sh --scenarios scale` runs it
/// with Q queues and with a baseline of few queues: (RSS(Q) − RSS(base)) / (Q − base) is the
/// memory per idle queue.
pub(crate) async fn idle_push(flags: &Flags) -> Result<()> {
    let a = DrainArgs {
        topic: flags.required("topic")?,
        group: flags.required("group")?,
        expect: u64::MAX,
        threads: flags.get("threads", 20)?,
        batch: flags.get("batch", 32)?,
        latency_skip: None,
        timeout: Duration::from_secs(flags.get("timeout-s", 120)?),
    };
    let want: usize = flags.required("expect-queues")?;
    let idle = Duration::from_secs_f64(flags.get("idle-s", 5.0)?);
    let topics = crate::topic::topics(flags)?;
    let stats = Arc::new(Stats::new(a.expect, None));
    let started = Instant::now();
    let consumer = start_push(flags, &a, &topics, false, false, stats.clone()).await?;
    println!("READY");
    let deadline = started + a.timeout;
    // The queues of the subscribed topics (the group's retry topic adds its own).
    let topic_queues = |c: &PushConsumer| {
        c.inspect()
            .iter()
            .filter(|q| topics.contains(&q.queue.topic))
            .count()
    };
    let mut assigned = topic_queues(&consumer);
    while assigned < want {
        if Instant::now() > deadline {
            let _ = tokio::time::timeout(Duration::from_secs(5), consumer.shutdown()).await;
            return Err(BenchError::Other(format!(
                "the push consumer holds {assigned} of {want} queues after {} s",
                a.timeout.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        assigned = topic_queues(&consumer);
    }
    let assigned_s = started.elapsed().as_secs_f64();
    let cpu_before: f64 = crate::procfs::thread_cpu().iter().map(|t| t.cpu_s).sum();
    tokio::time::sleep(idle).await;
    let mut samples = Vec::new();
    for _ in 0..5 {
        samples.extend(crate::procfs::rss_bytes());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    samples.sort_unstable();
    let cpu_idle = crate::procfs::thread_cpu()
        .iter()
        .map(|t| t.cpu_s)
        .sum::<f64>()
        - cpu_before;
    let line = serde_json::json!({
        "client": "rmq-push",
        "assigned_queues": consumer.inspect().len(),
        "topic_queues": topic_queues(&consumer),
        "topics": topics.len(),
        "assigned_s": assigned_s,
        "idle_s": idle.as_secs_f64() + 1.0,
        "idle_rss_bytes": samples.get(samples.len() / 2),
        "rss_samples": samples,
        "threads": crate::procfs::threads(),
        "idle_cpu_s": cpu_idle,
        "received": stats.count(),
    });
    println!("{}", crate::stats::result_line(&line));
    let _ = tokio::time::timeout(Duration::from_secs(5), consumer.shutdown()).await;
    Ok(())
}

/// `drain-simple --topic T --group G --expect N [--threads 20] [--batch 32]
/// [--endpoint HOST:PORT]`: rmq's SimpleConsumer (pop, RocketMQ 5); `threads`
/// tasks each receive up to `batch` messages (invisible 60 s, long polling 2 s)
/// and batch-ack them. With `--endpoint`, through the RocketMQ 5.x proxy at that
/// gRPC address (`ReceiveMessage` / `AckMessage`; the result line names the
/// client `rmq-grpc-simple`), long polling 5 s: the proxy polls at least
/// `grpcClientConsumerMinLongPollingTimeoutMillis` (5 s by default) and refuses a
/// receive whose deadline (long polling + the 3 s request timeout) leaves less.
pub(crate) async fn drain_simple(flags: &Flags) -> Result<()> {
    let a = Arc::new(DrainArgs::parse(flags)?);
    let stats = Arc::new(Stats::new(a.expect, None));
    let started = Instant::now();
    let endpoint = flags.optional::<String>("endpoint")?;
    let client = if endpoint.is_some() {
        "rmq-grpc-simple"
    } else {
        "rmq-simple"
    };
    let mut builder = rmq_consumer_pull::SimpleConsumer::builder()
        .group(a.group.clone())
        .client_config(flags.client_config(None)?)
        .subscribe(a.topic.clone(), rmq_consumer_pull::Expression::all())
        .await_duration(Duration::from_secs(2));
    if let Some(endpoint) = endpoint {
        builder = builder
            .endpoint(endpoint)
            .await_duration(Duration::from_secs(5));
    }
    let consumer = builder
        .start()
        .await
        .map_err(|source| BenchError::PullConsumer {
            what: format!("starting the simple consumer of {}", a.topic),
            source: Box::new(source),
        })?;
    println!("READY");
    let batch = usize::try_from(a.batch).unwrap_or(32).clamp(1, 32);
    let mut handles = Vec::new();
    for _ in 0..a.threads.max(1) {
        let (consumer, stats) = (consumer.clone(), stats.clone());
        handles.push(tokio::spawn(async move {
            while !stats.is_done() {
                let got = consumer
                    .receive(batch, Duration::from_secs(60))
                    .await
                    .map_err(|source| BenchError::PullConsumer {
                        what: "receiving".into(),
                        source: Box::new(source),
                    })?;
                if got.is_empty() {
                    continue;
                }
                consumer
                    .ack_batch(&got)
                    .await
                    .map_err(|source| BenchError::PullConsumer {
                        what: "acking".into(),
                        source: Box::new(source),
                    })?;
                stats.add(u64::try_from(got.len()).unwrap_or(u64::MAX));
            }
            Ok::<(), BenchError>(())
        }));
    }
    let waiter = stats.wait(a.timeout);
    let all = async {
        for h in handles {
            h.await
                .map_err(|e| BenchError::Other(format!("receive task: {e}")))??;
        }
        Ok::<(), BenchError>(())
    };
    let (timed_out, received) = tokio::select! {
        t = waiter => (t, Ok(())),
        r = all => (false, r),
    };
    received?;
    println!("{}", stats.result_line(client, started, timed_out));
    let _ = tokio::time::timeout(Duration::from_secs(5), consumer.shutdown()).await;
    Ok(())
}

/// `set-pop-mode --topic T --group G`: SET_MESSAGE_REQUEST_MODE POP (every
/// member pops every queue) at every broker of `topic`, for a peer whose
/// client pops only when the broker says so (Java `clientRebalance=false`).
pub(crate) async fn set_pop_mode(flags: &Flags) -> Result<()> {
    let topic: String = flags.required("topic")?;
    let group: String = flags.required("group")?;
    let instance = instance(flags, "set-pop-mode")?;
    let queues = queues_with_addrs(&instance, &topic).await?;
    let mut addrs: Vec<&String> = queues.iter().map(|(_, a)| a).collect();
    addrs.sort();
    addrs.dedup();
    let body = rmq_protocol::body::SetMessageRequestModeRequestBody {
        consumer_group: group.clone(),
        mode: rmq_protocol::body::MessageRequestMode::Pop,
        pop_share_queue_num: 0,
        topic: topic.clone(),
    };
    for addr in addrs {
        instance
            .set_message_request_mode(addr, &body)
            .await
            .map_err(|source| BenchError::Client {
                what: format!("setting the request mode of {group} on {topic} at {addr}"),
                source,
            })?;
    }
    println!("pop mode set for {group} on {topic}");
    Ok(())
}

/// The readable queues of `topic` with the master address of each.
pub(crate) async fn queues_with_addrs(
    instance: &ClientInstance,
    topic: &str,
) -> Result<Vec<(MessageQueue, String)>> {
    let route = instance
        .route(topic)
        .await
        .map_err(|source| BenchError::Client {
            what: format!("route of {topic}"),
            source,
        })?;
    route
        .subscribe_queues()
        .iter()
        .map(|mq| {
            instance
                .find_broker_addr_in_subscribe(&mq.broker_name, 0, true)
                .map(|(addr, _)| (mq.clone(), addr))
                .ok_or_else(|| {
                    BenchError::Other(format!("no master address for broker {}", mq.broker_name))
                })
        })
        .collect()
}

fn pull_header(a: &DrainArgs, mq: &MessageQueue, offset: i64) -> PullMessageRequestHeader {
    PullMessageRequestHeader {
        consumer_group: a.group.clone(),
        topic: mq.topic.clone(),
        queue_id: mq.queue_id,
        queue_offset: offset,
        max_msg_nums: a.batch,
        // No long polling (everything is stored already), no offset commit;
        // the subscription travels with the request (no heartbeat needed).
        sys_flag: pull_sys_flag::build(false, false, true, false, false),
        commit_offset: 0,
        suspend_timeout_millis: 0,
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
        broker_name: Some(mq.broker_name.clone()),
    }
}

const PULL_TIMEOUT: Duration = Duration::from_secs(10);

/// `drain-pull --topic T --group G --expect N [--batch 32]`: rmq's explicit
/// [`PullConsumer`](rmq_consumer_pull::PullConsumer); one task per queue calls
/// `pull(queue, "*", offset, batch)` from offset 0 (messages fully decoded,
/// tags re-checked) until the queue has no new message.
pub(crate) async fn drain_pull(flags: &Flags) -> Result<()> {
    let a = Arc::new(DrainArgs::parse(flags)?);
    let stats = Arc::new(Stats::new(a.expect, None));
    let started = Instant::now();
    let consumer = rmq_consumer_pull::PullConsumer::builder()
        .group(a.group.clone())
        .client_config(flags.client_config(None)?)
        .pull_timeout(PULL_TIMEOUT)
        .start()
        .await
        .map_err(|source| BenchError::PullConsumer {
            what: "starting the pull consumer".into(),
            source: Box::new(source),
        })?;
    let queues = consumer
        .fetch_subscribe_queues(&a.topic)
        .await
        .map_err(|source| BenchError::PullConsumer {
            what: format!("queues of {}", a.topic),
            source: Box::new(source),
        })?;
    println!("READY");
    let timed_out = pull_queues(&consumer, queues, &stats, a.batch, a.timeout).await?;
    println!("{}", stats.result_line("rmq-pull", started, timed_out));
    let _ = tokio::time::timeout(Duration::from_secs(5), consumer.shutdown()).await;
    Ok(())
}

/// One task per queue pulls it with `consumer` from offset 0, `batch` messages a call, until
/// the queue has no new message or `stats` counted every expected message; true when `timeout`
/// passed first.
pub(crate) async fn pull_queues(
    consumer: &rmq_consumer_pull::PullConsumer,
    queues: Vec<MessageQueue>,
    stats: &Arc<Stats>,
    batch: i32,
    timeout: Duration,
) -> Result<bool> {
    let mut handles = Vec::new();
    for mq in queues {
        let (consumer, stats) = (consumer.clone(), stats.clone());
        handles.push(tokio::spawn(async move {
            let mut offset = 0i64;
            loop {
                let result = consumer
                    .pull(&mq, "*", offset, batch)
                    .await
                    .map_err(|source| BenchError::PullConsumer {
                        what: format!("pulling {mq} at {offset}"),
                        source: Box::new(source),
                    })?;
                match result.status {
                    PullStatus::Found => {
                        stats.add(u64::try_from(result.messages.len()).unwrap_or(u64::MAX));
                    }
                    PullStatus::NoNewMsg => return Ok::<(), BenchError>(()),
                    _ => {}
                }
                if stats.is_done() {
                    return Ok(());
                }
                offset = result.next_begin_offset;
            }
        }));
    }
    let waiter = stats.wait(timeout);
    let all = async {
        for h in handles {
            h.await
                .map_err(|e| BenchError::Other(format!("pull task: {e}")))??;
        }
        Ok::<(), BenchError>(())
    };
    let (timed_out, pulled) = tokio::select! {
        t = waiter => (t, Ok(())),
        r = all => (false, r),
    };
    pulled?;
    Ok(timed_out)
}

/// Counts the stored records of a pull body by walking their TOTALSIZE
/// fields (no decoding). A malformed size ends the walk.
pub(crate) fn count_records(body: &Bytes) -> u64 {
    let mut pos = 0usize;
    let mut n = 0u64;
    while let Some(size) = body
        .get(pos..pos.saturating_add(4))
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .map(i32::from_be_bytes)
    {
        let Ok(size) = usize::try_from(size) else {
            break;
        };
        if size < 4 {
            break;
        }
        pos = pos.saturating_add(size);
        if pos > body.len() {
            break;
        }
        n += 1;
    }
    n
}

/// `raw-pull --topic T --group G --expect N [--batch 32]`: per queue, a loop
/// of PULL_MESSAGE requests on a bare `RemotingClient`, counting records
/// without building messages. The route is looked up first with a client
/// instance (not timed).
pub(crate) async fn raw_pull(flags: &Flags) -> Result<()> {
    let a = Arc::new(DrainArgs::parse(flags)?);
    let stats = Arc::new(Stats::new(a.expect, None));
    let started = Instant::now();
    let queues = {
        let instance = instance(flags, "bench-raw")?;
        let q = queues_with_addrs(&instance, &a.topic).await?;
        instance.shutdown().await;
        q
    };
    let client = RemotingClient::new(ClientOptions::default());
    println!("READY");
    let mut handles = Vec::new();
    for (mq, addr) in queues {
        let (client, stats, a) = (client.clone(), stats.clone(), a.clone());
        handles.push(tokio::spawn(async move {
            let mut offset = 0i64;
            loop {
                let request = RemotingCommand::request(
                    RequestCode::PULL_MESSAGE,
                    &pull_header(&a, &mq, offset),
                );
                let response =
                    client
                        .invoke(&addr, request, PULL_TIMEOUT)
                        .await
                        .map_err(|source| BenchError::Remoting {
                            what: format!("PULL_MESSAGE {mq} at {offset}"),
                            source,
                        })?;
                let code = response.response_code();
                if code == ResponseCode::PULL_NOT_FOUND {
                    return Ok::<(), BenchError>(());
                }
                let header: PullMessageResponseHeader =
                    response
                        .decode_header()
                        .map_err(|source| BenchError::Protocol {
                            what: format!("PULL_MESSAGE response header ({code:?})"),
                            source,
                        })?;
                if code == ResponseCode::SUCCESS {
                    stats.add(count_records(&response.body));
                } else if code != ResponseCode::PULL_RETRY_IMMEDIATELY
                    && code != ResponseCode::PULL_OFFSET_MOVED
                {
                    return Err(BenchError::Other(format!(
                        "PULL_MESSAGE {mq} at {offset}: broker answered {code:?} {:?}",
                        response.remark
                    )));
                }
                if stats.is_done() {
                    return Ok(());
                }
                offset = header.next_begin_offset;
            }
        }));
    }
    let waiter = stats.wait(a.timeout);
    let all = async {
        for h in handles {
            h.await
                .map_err(|e| BenchError::Other(format!("raw pull task: {e}")))??;
        }
        Ok::<(), BenchError>(())
    };
    let (timed_out, pulled) = tokio::select! {
        t = waiter => (t, Ok(())),
        r = all => (false, r),
    };
    pulled?;
    println!("{}", stats.result_line("raw-pull", started, timed_out));
    client.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_records_by_total_size() {
        let mut v = Vec::new();
        for size in [10i32, 4, 20] {
            v.extend_from_slice(&size.to_be_bytes());
            v.extend(std::iter::repeat_n(0u8, usize::try_from(size).unwrap() - 4));
        }
        assert_eq!(count_records(&Bytes::from(v.clone())), 3);
        // Truncated last record: not counted.
        v.truncate(v.len() - 1);
        assert_eq!(count_records(&Bytes::from(v)), 2);
        // A bad size stops the walk.
        assert_eq!(count_records(&Bytes::from_static(&[0, 0, 0, 2, 9, 9])), 0);
        assert_eq!(count_records(&Bytes::new()), 0);
    }
}
