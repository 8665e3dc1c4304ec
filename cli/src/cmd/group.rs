//! `rmq group lag G` (per-queue broker max, committed, lag; `--watch`) and
//! `rmq group reset G --to first|last|TIME`.

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::time::{Duration, SystemTime};

use clap::Subcommand;
use rmq::protocol::header::{
    BoundaryType, QueryConsumerOffsetRequestHeader, ResetOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
};
use serde_json::json;

use crate::admin::{Admin, Master};
use crate::cmd::{Outcome, confirm};
use crate::error::{CliError, Result};
use crate::output::{Out, Table};
use crate::settings::ConnectArgs;
use crate::time::{POSITION_HELP, Position, epoch_ms, format_ms};

const EXAMPLES: &str = "\
Examples:
  rmq group lag billing                       per queue: broker max, committed, lag; total
  rmq group lag billing --watch               refresh every 2 s until Ctrl-C
  rmq group lag billing --topic orders --json
  rmq group reset billing --to first          replay everything (asks first)
  rmq group reset billing --to 2024-05-01T12:00:00Z --topic orders --yes
  rmq group reset billing --to last --yes     skip the backlog";

/// Consumer groups: lag, reset.
#[derive(Debug, Subcommand)]
#[command(after_help = EXAMPLES)]
pub(crate) enum GroupCommand {
    /// Show a group's progress: per queue the broker's max offset, the committed offset and the lag
    #[command(
        after_help = "Examples:\n  rmq group lag billing\n  rmq group lag billing --watch 5s\n  rmq group lag billing --topic orders --json\n\n\
The rows are the queues the group has committed offsets for (its %RETRY% topic included);\n\
with --topic, every queue of that topic. Brokers that cannot be asked are reported on stderr."
    )]
    Lag {
        /// Consumer group
        group: String,
        /// Only this topic
        #[arg(long)]
        topic: Option<String>,
        /// Refresh every INTERVAL until Ctrl-C
        #[arg(long, value_name = "INTERVAL", num_args = 0..=1, default_missing_value = "2s",
              value_parser = humantime::parse_duration)]
        watch: Option<Duration>,
        /// One JSON object (per refresh)
        #[arg(long)]
        json: bool,
    },
    /// Move a group's committed offsets to the first or last message, or to a time
    #[command(
        after_help = "Examples:\n  rmq group reset billing --to first\n  rmq group reset billing --to 1h --topic orders --yes\n\n\
Shows the current and new offset of every queue, then asks (unless --yes). A group with\n\
live consumers is refused: they would overwrite the new offsets with their next commit.\n\
--force hands the reset to the brokers instead (5.x: they store the offsets and answer the\n\
consumers' next pull with PULL_OFFSET_MOVED; 4.9.x: they tell the online consumers); whether\n\
a running consumer rewinds depends on how it handles that. Without --topic,\n\
every topic the group has committed offsets for (not its %RETRY% and %DLQ% topics)."
    )]
    Reset {
        /// Consumer group
        group: String,
        /// Target position
        #[arg(long, value_parser = Position::parse, help = POSITION_HELP)]
        to: Position,
        /// Only these topics (repeatable)
        #[arg(long = "topic", value_name = "TOPIC")]
        topics: Vec<String>,
        /// Do not ask for confirmation
        #[arg(short, long)]
        yes: bool,
        /// Reset even while the group has live consumers
        #[arg(long)]
        force: bool,
    },
}

pub(crate) async fn run(connect: &ConnectArgs, cmd: GroupCommand) -> Result<Outcome> {
    let admin = Admin::connect(connect)?;
    let result = match cmd {
        GroupCommand::Lag {
            group,
            topic,
            watch,
            json,
        } => lag(&admin, &group, topic.as_deref(), watch, json).await,
        GroupCommand::Reset {
            group,
            to,
            topics,
            yes,
            force,
        } => reset(&admin, &group, to, topics, yes, force).await,
    };
    admin.release().await;
    result.map(|()| Outcome::Done)
}

/// One queue's progress.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct LagRow {
    topic: String,
    broker: String,
    queue_id: i32,
    broker_offset: i64,
    consumer_offset: i64,
    lag: i64,
    last_timestamp: i64,
}

/// A group's progress on every master, its live consumers, and the
/// brokers that could not be asked.
#[derive(Debug, Default)]
struct Progress {
    rows: Vec<LagRow>,
    consumers: BTreeSet<String>,
    unreachable: Vec<String>,
}

impl Progress {
    fn total(&self) -> i64 {
        self.rows.iter().map(|r| r.lag).fold(0, i64::saturating_add)
    }
}

async fn collect(admin: &Admin, masters: &[Master], group: &str, topic: Option<&str>) -> Progress {
    let mut p = Progress::default();
    for m in masters {
        match admin
            .instance()
            .get_consume_stats(&m.addr, group, topic)
            .await
        {
            Ok(stats) => p
                .rows
                .extend(stats.offset_table.iter().map(|(mq, w)| LagRow {
                    topic: mq.topic.clone(),
                    broker: mq.broker_name.clone(),
                    queue_id: mq.queue_id,
                    broker_offset: w.broker_offset,
                    consumer_offset: w.consumer_offset,
                    lag: w.lag(),
                    last_timestamp: w.last_timestamp,
                })),
            Err(e) => p.unreachable.push(format!("{} ({}): {e}", m.name, m.addr)),
        }
        if let Ok(ids) = admin.instance().get_consumer_id_list(&m.addr, group).await {
            p.consumers.extend(ids);
        }
    }
    p.rows.sort();
    p
}

fn render(group: &str, p: &Progress, json: bool) -> Vec<String> {
    if json {
        let queues: Vec<_> = p
            .rows
            .iter()
            .map(|r| {
                json!({
                    "topic": r.topic, "broker": r.broker, "queue_id": r.queue_id,
                    "broker_offset": r.broker_offset, "consumer_offset": r.consumer_offset,
                    "lag": r.lag, "last_timestamp": r.last_timestamp,
                })
            })
            .collect();
        let v = json!({
            "group": group,
            "total_lag": p.total(),
            "consumers": p.consumers,
            "queues": queues,
            "unreachable": p.unreachable,
        });
        return vec![v.to_string()];
    }
    let mut t = Table::new(&[
        "TOPIC",
        "BROKER",
        "QUEUE",
        "BROKER_OFFSET",
        "CONSUMER_OFFSET",
        "LAG",
        "LAST_CONSUMED",
    ]);
    for r in &p.rows {
        t.row(vec![
            r.topic.clone(),
            r.broker.clone(),
            r.queue_id.to_string(),
            r.broker_offset.to_string(),
            r.consumer_offset.to_string(),
            r.lag.to_string(),
            format_ms(r.last_timestamp),
        ]);
    }
    let mut lines = t.lines();
    lines.push(format!(
        "group {group}: total lag {} over {} queues, {} consumers online",
        p.total(),
        p.rows.len(),
        p.consumers.len()
    ));
    lines
}

async fn lag(
    admin: &Admin,
    group: &str,
    topic: Option<&str>,
    watch: Option<Duration>,
    json: bool,
) -> Result<()> {
    let masters = admin.masters(None).await?;
    let mut out = Out::new();
    let Some(every) = watch else {
        let p = collect(admin, &masters, group, topic).await;
        for u in &p.unreachable {
            eprintln!("warning: cannot ask broker {u}");
        }
        if p.rows.is_empty() && p.unreachable.is_empty() {
            return Err(CliError::Refused(format!(
                "group {group} has no committed offsets{} on any broker (unknown group, or it \
                 has not committed yet; --topic shows a topic's queues anyway)",
                topic.map(|t| format!(" for topic {t}")).unwrap_or_default()
            )));
        }
        for line in render(group, &p, json) {
            out.line(&line)?;
        }
        return out.flush();
    };
    let every = every.max(Duration::from_millis(100));
    let clear = std::io::stdout().is_terminal() && !json;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        let p = collect(admin, &masters, group, topic).await;
        if clear {
            out.line("\x1b[2J\x1b[H")?;
        }
        if !json {
            out.line(&format!(
                "{}  (every {}, Ctrl-C to stop)",
                humantime::format_rfc3339_seconds(SystemTime::now()),
                humantime::format_duration(every)
            ))?;
        }
        for line in render(group, &p, json) {
            out.line(&line)?;
        }
        for u in &p.unreachable {
            out.line(&format!("warning: cannot ask broker {u}"))?;
        }
        out.flush()?;
        tokio::select! {
            _ = &mut ctrl_c => return Ok(()),
            () = tokio::time::sleep(every) => {}
        }
    }
}

/// One queue to reset.
#[derive(Debug)]
struct Planned {
    topic: String,
    master: Master,
    queue_id: i32,
    current: Option<i64>,
    target: i64,
}

async fn reset(
    admin: &Admin,
    group: &str,
    to: Position,
    topics: Vec<String>,
    yes: bool,
    force: bool,
) -> Result<()> {
    let masters = admin.masters(None).await?;
    let topics = if topics.is_empty() {
        let p = collect(admin, &masters, group, None).await;
        let found: BTreeSet<String> = p
            .rows
            .into_iter()
            .map(|r| r.topic)
            .filter(|t| !t.starts_with("%RETRY%") && !t.starts_with("%DLQ%"))
            .collect();
        if found.is_empty() {
            return Err(CliError::Refused(format!(
                "group {group} has no committed offsets on any broker; name the topics to reset \
                 with --topic"
            )));
        }
        found.into_iter().collect()
    } else {
        topics
    };
    let mut live = BTreeSet::new();
    for m in &masters {
        live.extend(
            admin
                .instance()
                .get_consumer_id_list(&m.addr, group)
                .await?,
        );
    }
    if !live.is_empty() && !force {
        return Err(CliError::Refused(format!(
            "group {group} has {} live consumers ({}): stop them first (they would overwrite the \
             reset with their next commit), or pass --force to have the brokers reset them",
            live.len(),
            live.iter().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    let plan = plan(admin, group, to, &topics).await?;
    let mut out = Out::new();
    let mut t = Table::new(&["TOPIC", "BROKER", "QUEUE", "CURRENT", "NEW"]);
    for p in &plan {
        t.row(vec![
            p.topic.clone(),
            p.master.name.clone(),
            p.queue_id.to_string(),
            p.current.map_or_else(|| "-".to_owned(), |c| c.to_string()),
            p.target.to_string(),
        ]);
    }
    t.print(&mut out)?;
    out.flush()?;
    if !yes {
        confirm(&format!(
            "reset group {group} to {to} on these {} queues?",
            plan.len()
        ))?;
    }
    if live.is_empty() {
        for p in &plan {
            let header = UpdateConsumerOffsetRequestHeader {
                consumer_group: group.to_owned(),
                topic: p.topic.clone(),
                queue_id: p.queue_id,
                commit_offset: p.target,
                broker_name: Some(p.master.name.clone()),
            };
            admin
                .instance()
                .update_consumer_offset(&p.master.addr, header)
                .await?;
        }
        out.line(&format!(
            "reset group {group} to {to}: {} queues",
            plan.len()
        ))?;
    } else {
        let timestamp = match to {
            Position::First => 0,
            Position::Last => -1,
            Position::Time(t) => epoch_ms(t),
        };
        let mut done = BTreeSet::new();
        for p in &plan {
            if !done.insert((p.topic.clone(), p.master.addr.clone())) {
                continue;
            }
            let header = ResetOffsetRequestHeader {
                topic: p.topic.clone(),
                group: group.to_owned(),
                timestamp,
                is_force: true,
                queue_id: None,
                offset: None,
            };
            let applied = admin
                .instance()
                .invoke_broker_to_reset_offset(&p.master.addr, header)
                .await?;
            for (mq, offset) in applied {
                out.line(&format!(
                    "{} {}#{} -> {offset}",
                    mq.topic, mq.broker_name, mq.queue_id
                ))?;
            }
        }
        out.line(&format!(
            "asked the brokers to reset group {group} to {to} ({} live consumers)",
            live.len()
        ))?;
    }
    out.flush()
}

async fn plan(admin: &Admin, group: &str, to: Position, topics: &[String]) -> Result<Vec<Planned>> {
    let mut plan = Vec::new();
    for topic in topics {
        let (route, masters) = admin.topic(topic).await?;
        for qd in &route.route_data().queue_datas {
            let Some(master) = masters.iter().find(|m| m.name == qd.broker_name) else {
                continue;
            };
            for queue_id in 0..qd.read_queue_nums {
                let i = admin.instance();
                let name = Some(master.name.as_str());
                let target = match to {
                    Position::First => {
                        i.get_min_offset(&master.addr, topic, queue_id, name)
                            .await?
                    }
                    Position::Last => {
                        i.get_max_offset(&master.addr, topic, queue_id, name)
                            .await?
                    }
                    Position::Time(t) => {
                        i.search_offset(
                            &master.addr,
                            topic,
                            queue_id,
                            epoch_ms(t),
                            BoundaryType::Lower,
                        )
                        .await?
                    }
                };
                let current = i
                    .query_consumer_offset(
                        &master.addr,
                        QueryConsumerOffsetRequestHeader {
                            consumer_group: group.to_owned(),
                            topic: topic.clone(),
                            queue_id,
                            set_zero_if_not_found: Some(false),
                            broker_name: name.map(str::to_owned),
                        },
                    )
                    .await?;
                plan.push(Planned {
                    topic: topic.clone(),
                    master: master.clone(),
                    queue_id,
                    current,
                    target,
                });
            }
        }
    }
    Ok(plan)
}
