//! `rmq bench`: produce then consume N messages on a scratch topic and
//! report both throughputs and the send latency.

use std::time::{Duration, Instant};

use clap::Args;
use futures::StreamExt;
use rmq::protocol::header::CreateTopicRequestHeader;
use rmq::{LitePullConsumer, Producer};

use crate::admin::Admin;
use crate::cmd::Outcome;
use crate::cmd::produce::{Sent, finish, send_all, spawn_generated};
use crate::cmd::topic::wait_for_route;
use crate::error::{CliError, Result};
use crate::progress::{Progress, per_second};
use crate::settings::ConnectArgs;
use crate::time::epoch_ms;

/// Measure produce and consume throughput on a scratch topic.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  rmq bench\n  rmq bench --count 200000 --size 512 --concurrency 64\n  rmq bench --keep          leave the topic and group for a look\n\n\
Creates a topic rmq_bench_<pid>_<ms> on every master, sends --count messages of --size\n\
bytes (--concurrency in flight, --rate per second at most), then reads them all back\n\
with a new consumer group, prints both rates and the send latency percentiles, and\n\
deletes the topic and the group (unless --keep)."
)]
pub(crate) struct BenchArgs {
    /// Messages to send and read back
    #[arg(long, default_value_t = 10_000)]
    count: u64,
    /// Body size in bytes
    #[arg(long, default_value_t = 1024)]
    size: usize,
    /// Queues per broker of the scratch topic
    #[arg(long, default_value_t = 4)]
    queues: i32,
    /// Sends in flight at once
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// At most this many messages per second
    #[arg(long)]
    rate: Option<f64>,
    /// Give up reading back when no message arrived for this long
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    idle_timeout: Duration,
    /// Keep the scratch topic and group
    #[arg(long)]
    keep: bool,
}

pub(crate) async fn run(connect: &ConnectArgs, args: BenchArgs) -> Result<Outcome> {
    if args.count == 0 || !(1..=64).contains(&args.queues) {
        return Err(CliError::Usage(
            "--count must be > 0 and --queues 1..=64".to_owned(),
        ));
    }
    let admin = Admin::connect(connect)?;
    let name = format!(
        "rmq_bench_{}_{}",
        std::process::id(),
        epoch_ms(std::time::SystemTime::now())
    );
    let result = bench(&admin, connect, &args, &name).await;
    if !args.keep {
        cleanup(&admin, &name).await;
    }
    admin.release().await;
    result
}

async fn bench(
    admin: &Admin,
    connect: &ConnectArgs,
    args: &BenchArgs,
    topic: &str,
) -> Result<Outcome> {
    let masters = admin.masters(None).await?;
    for m in &masters {
        let header = CreateTopicRequestHeader::new(topic, args.queues);
        admin.instance().create_topic(&m.addr, header).await?;
    }
    wait_for_route(admin, topic, &masters, Duration::from_secs(15)).await?;
    println!(
        "topic {topic} on {} broker(s), {} queues each: {} messages of {} bytes, {} in flight",
        masters.len(),
        args.queues,
        args.count,
        args.size,
        args.concurrency
    );

    let producer = Producer::builder()
        .group(topic)
        .client_config(connect.client_config("rmq-cli-bench-producer")?)
        .start()
        .await?;
    let rx = spawn_generated(topic, args.size, args.count);
    let sent = send_all(
        &producer,
        rx,
        Some(args.count),
        args.concurrency.max(1),
        args.rate,
        false,
        false,
    )
    .await;
    let _ = producer.shutdown().await;
    let sent: Sent = sent?;
    println!("produce: {}", sent.summary().replace('\n', "\n         "));
    if sent.interrupted || sent.failed > 0 {
        return finish(sent);
    }

    let consumer = LitePullConsumer::builder()
        .client_config(connect.client_config("rmq-cli-bench-consumer")?)
        .group(topic)
        .subscribe(topic, rmq::Expression::all())
        .consume_from(rmq::ConsumeFrom::FirstOffset)
        .pull_batch_size(32)
        .start()
        .await?;
    let read = read_back(&consumer, sent.ok, args.idle_timeout).await;
    let shut = consumer.shutdown().await;
    let (n, elapsed) = read?;
    shut?;
    #[allow(clippy::cast_precision_loss)]
    let mib = per_second(n.saturating_mul(args.size as u64), elapsed) / (1024.0 * 1024.0);
    println!(
        "consume: {n} messages in {:.2} s: {:.0} msg/s, {mib:.2} MiB/s",
        elapsed.as_secs_f64(),
        per_second(n, elapsed)
    );
    if n < sent.ok {
        return Err(CliError::Refused(format!(
            "read back only {n} of {} messages within the idle timeout of {:?}",
            sent.ok, args.idle_timeout
        )));
    }
    Ok(Outcome::Done)
}

/// Reads until `want` messages arrived (or nothing came for `idle`, or
/// Ctrl-C); returns the count and the time from the first message.
async fn read_back(
    consumer: &LitePullConsumer,
    want: u64,
    idle: Duration,
) -> Result<(u64, Duration)> {
    let mut stream = consumer.stream();
    let mut progress = Progress::new("consume", Some(want), false);
    let mut n = 0_u64;
    let mut first = None;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    while n < want {
        tokio::select! {
            _ = &mut ctrl_c => break,
            item = tokio::time::timeout(idle, stream.next()) => match item {
                Ok(Some(Ok(_))) => {
                    first.get_or_insert_with(Instant::now);
                    n += 1;
                    progress.set(n);
                }
                Ok(Some(Err(e))) => eprintln!("warning: {}", crate::error::report(&e)),
                Ok(None) | Err(_) => break,
            },
        }
    }
    progress.finish();
    Ok((n, first.map(|t| t.elapsed()).unwrap_or_default()))
}

/// Deletes the scratch topic and group everywhere (best effort: failures
/// are reported, not fatal).
async fn cleanup(admin: &Admin, topic: &str) {
    let Ok(masters) = admin.masters(None).await else {
        eprintln!("warning: could not clean up topic {topic}");
        return;
    };
    for m in &masters {
        if let Err(e) = admin
            .instance()
            .delete_topic_in_broker(&m.addr, topic)
            .await
        {
            eprintln!("warning: could not delete topic {topic} on {}: {e}", m.name);
        }
        if let Err(e) = admin
            .instance()
            .delete_subscription_group(&m.addr, topic, true)
            .await
        {
            eprintln!("warning: could not delete group {topic} on {}: {e}", m.name);
        }
    }
    if let Err(e) = admin.instance().delete_topic_in_namesrv(topic, None).await {
        eprintln!("warning: could not delete topic {topic} on the name servers: {e}");
    }
}
