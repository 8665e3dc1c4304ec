//! `rmq consume TOPIC --group G` (a clustering member of the group, offsets
//! committed) and `rmq tail TOPIC` (a fresh broadcasting group, nothing
//! committed): print messages as lines or JSON until `--count`,
//! `--idle-timeout` or Ctrl-C.

use std::time::Duration;

use clap::Args;
use futures::StreamExt;
use rmq::{Expression, LitePullConsumer, MessageModel};

use crate::cmd::Outcome;
use crate::error::{CliError, Result};
use crate::output::{Out, is_broken_pipe, message_json, message_line};
use crate::settings::ConnectArgs;
use crate::time::{POSITION_HELP, Position};

/// How often buffered output is flushed while messages keep arriving.
const FLUSH_EVERY: Duration = Duration::from_millis(200);

const CONSUME_EXAMPLES: &str = "\
Examples:
  rmq consume orders --group billing                     follow the group's share of the queues
  rmq consume orders --group billing --from first --count 100 --json > batch.jsonl
  rmq consume orders --group audit --tags 'created || paid'
  rmq consume orders --group big --sql 'amount > 100'    (broker: enablePropertyFilter=true)

Joins GROUP (clustering: the queues are shared with the group's other members) and
prints each message: `<broker>#<queue>@<offset> <store time> <msg id> [tags=..] [keys=..]: <body>`,
or one JSON object per line with --json. Offsets are committed every 5 s and when the
command stops (after --count messages, --idle-timeout, or Ctrl-C); it then exits 0.
--from applies to a group without committed offsets (as Java's consumeFromWhere);
move an existing group with `rmq group reset`.";

const TAIL_EXAMPLES: &str = "\
Examples:
  rmq tail orders                          new messages as they arrive
  rmq tail orders --from 10m --json        everything of the last ten minutes, as JSON lines
  rmq tail orders --tags paid --count 1    wait for the next paid order

Reads every queue of TOPIC as a fresh broadcasting group (nothing is committed, other
consumers are not affected), from --from (default: the end) until --count, --idle-timeout
or Ctrl-C. The group's subscription stays registered on the brokers, as for any consumer.";

/// Filter and output options shared by `consume` and `tail`.
#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    /// Topic to read
    topic: String,

    /// Only messages with these tags (`a || b`) [default: all]
    #[arg(long, conflicts_with = "sql")]
    tags: Option<String>,

    /// Only messages matching this SQL92 expression on their properties
    #[arg(long)]
    sql: Option<String>,

    /// Stop after this many messages
    #[arg(long, value_name = "N")]
    count: Option<u64>,

    /// Stop when no message arrived for this long, e.g. `5s`
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    idle_timeout: Option<Duration>,

    /// One JSON object per message (body as text, or body_base64 when not UTF-8)
    #[arg(long)]
    json: bool,
}

/// Consume a topic as a member of a consumer group (offsets committed).
#[derive(Debug, Args)]
#[command(after_help = CONSUME_EXAMPLES)]
pub(crate) struct ConsumeArgs {
    #[command(flatten)]
    read: ReadArgs,

    /// Consumer group
    #[arg(short, long)]
    group: String,

    /// Where a group without committed offsets starts: first, last or a time
    #[arg(long, default_value = "last", value_parser = Position::parse, long_help = POSITION_HELP)]
    from: Position,
}

/// Print a topic's messages as they arrive, without joining or committing.
#[derive(Debug, Args)]
#[command(after_help = TAIL_EXAMPLES)]
pub(crate) struct TailArgs {
    #[command(flatten)]
    read: ReadArgs,

    /// Where to start: first, last or a time
    #[arg(long, default_value = "last", value_parser = Position::parse, long_help = POSITION_HELP)]
    from: Position,
}

impl ReadArgs {
    fn expression(&self) -> Expression {
        match (&self.tags, &self.sql) {
            (_, Some(sql)) => Expression::sql(sql.clone()),
            (Some(tags), None) => Expression::tag(tags.clone()),
            (None, None) => Expression::all(),
        }
    }
}

pub(crate) async fn consume(connect: &ConnectArgs, args: ConsumeArgs) -> Result<Outcome> {
    let config = connect.client_config("rmq-cli-consume")?;
    let consumer = LitePullConsumer::builder()
        .client_config(config)
        .group(&args.group)
        .subscribe(&args.read.topic, args.read.expression())
        .consume_from(args.from.consume_from())
        .start()
        .await?;
    eprintln!("consuming {} as group {}", args.read.topic, args.group);
    let printed = print_messages(&consumer, &args.read).await;
    let committed = consumer.commit().await;
    let shut = consumer.shutdown().await;
    let n = printed?;
    committed?;
    shut?;
    eprintln!(
        "consumed {n} messages; offsets committed for group {}",
        args.group
    );
    Ok(Outcome::Done)
}

pub(crate) async fn tail(connect: &ConnectArgs, args: TailArgs) -> Result<Outcome> {
    let config = connect.client_config("rmq-cli-tail")?;
    let group = format!(
        "rmq-tail-{}-{}",
        std::process::id(),
        crate::time::epoch_ms(std::time::SystemTime::now())
    );
    // Broadcasting offsets live in a local file: keep it out of the way.
    let scratch = tempfile::tempdir().map_err(|e| CliError::io("cannot create a temp dir", e))?;
    let consumer = LitePullConsumer::builder()
        .client_config(config)
        .group(&group)
        .message_model(MessageModel::Broadcasting)
        .subscribe(&args.read.topic, args.read.expression())
        .consume_from(args.from.consume_from())
        .auto_commit(false)
        .offset_store_dir(scratch.path())
        .start()
        .await?;
    eprintln!(
        "tailing {} from {} as broadcasting group {group} (nothing committed)",
        args.read.topic, args.from
    );
    let printed = print_messages(&consumer, &args.read).await;
    let shut = consumer.shutdown().await;
    let n = printed?;
    shut?;
    eprintln!("tailed {n} messages");
    Ok(Outcome::Done)
}

/// Prints until the count, the idle timeout, Ctrl-C or a closed stdout;
/// returns how many were printed.
async fn print_messages(consumer: &LitePullConsumer, args: &ReadArgs) -> Result<u64> {
    let mut out = Out::new();
    let mut stream = consumer.stream();
    let mut n = 0_u64;
    let limit = args.count.unwrap_or(u64::MAX);
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let idle_from = |now: tokio::time::Instant| args.idle_timeout.and_then(|d| now.checked_add(d));
    let mut idle_at = idle_from(tokio::time::Instant::now());
    let mut flush = tokio::time::interval(FLUSH_EVERY);
    while n < limit {
        let idle_deadline =
            tokio::time::sleep_until(idle_at.unwrap_or_else(tokio::time::Instant::now));
        tokio::select! {
            biased;
            _ = &mut ctrl_c => break,
            item = stream.next() => match item {
                Some(Ok(msg)) => {
                    let line = if args.json {
                        message_json(&msg).to_string()
                    } else {
                        message_line(&msg)
                    };
                    idle_at = idle_from(tokio::time::Instant::now());
                    match out.line(&line) {
                        Ok(()) => n += 1,
                        Err(e) if is_broken_pipe(&e) => return Ok(n),
                        Err(e) => return Err(e),
                    }
                }
                Some(Err(e)) => eprintln!("warning: {}", crate::error::report(&e)),
                None => break,
            },
            _ = flush.tick() => match out.flush() {
                Err(e) if is_broken_pipe(&e) => return Ok(n),
                other => other?,
            },
            () = idle_deadline, if idle_at.is_some() => break,
        }
    }
    match out.flush() {
        Err(e) if is_broken_pipe(&e) => Ok(n),
        other => other.map(|()| n),
    }
}
