//! `rmq topic list|create|describe|delete`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use rmq::client_core::Error as ClientError;
use rmq::protocol::body::perm;
use rmq::protocol::header::CreateTopicRequestHeader;
use serde_json::json;

use crate::admin::{Admin, Master};
use crate::cmd::{Outcome, confirm};
use crate::error::{CliError, Result};
use crate::output::{Out, Table};
use crate::settings::ConnectArgs;
use crate::time::format_ms;

/// How often `create` asks the name server for the new route.
const ROUTE_POLL: Duration = Duration::from_millis(100);

/// Topics the brokers keep for themselves (Java `TopicValidator`).
const SYSTEM_TOPICS: &[&str] = &[
    "TBW102",
    "SCHEDULE_TOPIC_XXXX",
    "BenchmarkTest",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
    "CHECKPOINT_TOPIC",
];

const EXAMPLES: &str = "\
Examples:
  rmq topic list
  rmq topic create orders --queues 8
  rmq topic create audit --queues 4 --broker broker-a
  rmq topic describe orders            queues with min/max offsets and last store time
  rmq topic describe orders --json
  rmq topic delete scratch --yes";

/// Topics: list, create, describe, delete.
#[derive(Debug, Subcommand)]
#[command(after_help = EXAMPLES)]
pub(crate) enum TopicCommand {
    /// List the topics the name servers know
    #[command(after_help = "Examples:\n  rmq topic list\n  rmq topic list --all --json")]
    List {
        /// Also system topics (%RETRY%, %DLQ%, rmq_sys_*, TBW102, cluster and broker names, ...)
        #[arg(long)]
        all: bool,
        /// A JSON array of names
        #[arg(long)]
        json: bool,
    },
    /// Create (or update) a topic on every master of the cluster, then wait for its route
    #[command(
        after_help = "Examples:\n  rmq topic create orders --queues 8\n  rmq topic create ledger --queues 4 --order --broker broker-a"
    )]
    Create(CreateArgs),
    /// Show a topic's brokers and queues: permissions, min/max offset, last store time
    #[command(
        after_help = "Examples:\n  rmq topic describe orders\n  rmq topic describe orders --json | jq '.queues[].max_offset'"
    )]
    Describe {
        /// Topic
        topic: String,
        /// One JSON object
        #[arg(long)]
        json: bool,
    },
    /// Delete a topic from its brokers and the name servers
    #[command(
        after_help = "Examples:\n  rmq topic delete scratch        asks for confirmation\n  rmq topic delete scratch --yes"
    )]
    Delete {
        /// Topic
        topic: String,
        /// Do not ask for confirmation
        #[arg(short, long)]
        yes: bool,
    },
}

/// `topic create` options.
#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    /// Topic
    topic: String,
    /// Read and write queues per broker
    #[arg(short, long, default_value_t = 8)]
    queues: i32,
    /// Only the masters of this cluster [default: every master]
    #[arg(short, long)]
    cluster: Option<String>,
    /// Only these brokers (by name, repeatable)
    #[arg(short, long = "broker", value_name = "NAME")]
    brokers: Vec<String>,
    /// An ordered topic
    #[arg(long)]
    order: bool,
    /// How long to wait for the name server to route the topic (0 = do not wait)
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    wait: Duration,
}

pub(crate) async fn run(connect: &ConnectArgs, cmd: TopicCommand) -> Result<Outcome> {
    let admin = Admin::connect(connect)?;
    let result = match cmd {
        TopicCommand::List { all, json } => list(&admin, all, json).await,
        TopicCommand::Create(args) => create(&admin, args).await,
        TopicCommand::Describe { topic, json } => describe(&admin, &topic, json).await,
        TopicCommand::Delete { topic, yes } => delete(&admin, &topic, yes).await,
    };
    admin.release().await;
    result.map(|()| Outcome::Done)
}

/// Whether `topic` is one the brokers keep for themselves, or the name of
/// a cluster or broker (brokers create those as topics).
fn is_system(topic: &str, names: &BTreeSet<String>) -> bool {
    SYSTEM_TOPICS.contains(&topic)
        || ["%RETRY%", "%DLQ%", "rmq_sys_", "RMQ_SYS_", "%SYS%", "%LMQ%"]
            .iter()
            .any(|p| topic.starts_with(p))
        || topic.ends_with("_REPLY_TOPIC")
        || names.contains(topic)
}

async fn list(admin: &Admin, all: bool, json: bool) -> Result<()> {
    let mut topics: Vec<String> = admin.instance().get_all_topic_list().await?.topic_list;
    if !all {
        let info = admin.instance().get_broker_cluster_info().await?;
        let names: BTreeSet<String> = info
            .cluster_addr_table
            .keys()
            .chain(info.broker_addr_table.keys())
            .cloned()
            .collect();
        topics.retain(|t| !is_system(t, &names));
    }
    topics.sort();
    topics.dedup();
    let mut out = Out::new();
    if json {
        out.line(&json!(topics).to_string())?;
    } else {
        for t in &topics {
            out.line(t)?;
        }
    }
    out.flush()
}

async fn create(admin: &Admin, args: CreateArgs) -> Result<()> {
    if !(1..=1024).contains(&args.queues) {
        return Err(CliError::Usage(format!(
            "--queues {}: must be between 1 and 1024",
            args.queues
        )));
    }
    let mut masters = admin.masters(args.cluster.as_deref()).await?;
    if !args.brokers.is_empty() {
        if let Some(missing) = args
            .brokers
            .iter()
            .find(|b| !masters.iter().any(|m| &m.name == *b))
        {
            return Err(CliError::Usage(format!(
                "no master broker named {missing:?} (known: {})",
                names(&masters)
            )));
        }
        masters.retain(|m| args.brokers.contains(&m.name));
    }
    let mut out = Out::new();
    for m in &masters {
        let mut header = CreateTopicRequestHeader::new(&args.topic, args.queues);
        header.order = args.order;
        admin.instance().create_topic(&m.addr, header).await?;
        out.line(&format!(
            "created topic {} with {} queues on {} ({})",
            args.topic, args.queues, m.name, m.addr
        ))?;
    }
    out.flush()?;
    if !args.wait.is_zero() {
        wait_for_route(admin, &args.topic, &masters, args.wait).await?;
    }
    Ok(())
}

pub(crate) fn names(masters: &[Master]) -> String {
    masters
        .iter()
        .map(|m| m.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Polls the name server until the route of `topic` lists every broker of
/// `masters` (brokers register new topics asynchronously: no event to
/// await).
pub(crate) async fn wait_for_route(
    admin: &Admin,
    topic: &str,
    masters: &[Master],
    within: Duration,
) -> Result<()> {
    let deadline = Instant::now() + within;
    loop {
        match admin.instance().refresh_route(topic).await {
            Ok(route) => {
                let routed: BTreeSet<&str> = route.broker_names().collect();
                if masters.iter().all(|m| routed.contains(m.name.as_str())) {
                    return Ok(());
                }
            }
            Err(ClientError::RouteNotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        if Instant::now() >= deadline {
            return Err(CliError::Refused(format!(
                "topic {topic} was created, but the name server did not route it to {} within {within:?}",
                names(masters)
            )));
        }
        tokio::time::sleep(ROUTE_POLL).await;
    }
}

async fn describe(admin: &Admin, topic: &str, json: bool) -> Result<()> {
    let (route, masters) = admin.topic(topic).await?;
    let data = route.route_data();
    let mut brokers = Vec::new();
    let mut queues = Vec::new();
    let mut table = Table::new(&[
        "BROKER",
        "QUEUE",
        "MIN_OFFSET",
        "MAX_OFFSET",
        "MESSAGES",
        "LAST_STORED",
    ]);
    let mut total = 0_i64;
    for qd in &data.queue_datas {
        let master = masters.iter().find(|m| m.name == qd.broker_name);
        brokers.push(json!({
            "broker": qd.broker_name,
            "addr": master.map(|m| m.addr.clone()),
            "read_queues": qd.read_queue_nums,
            "write_queues": qd.write_queue_nums,
            "perm": perm_text(qd.perm),
        }));
        let Some(master) = master else { continue };
        let stats = admin
            .instance()
            .get_topic_stats_info(&master.addr, topic)
            .await?;
        for (mq, off) in &stats.offset_table {
            let messages = off.max_offset.saturating_sub(off.min_offset).max(0);
            total = total.saturating_add(messages);
            table.row(vec![
                mq.broker_name.clone(),
                mq.queue_id.to_string(),
                off.min_offset.to_string(),
                off.max_offset.to_string(),
                messages.to_string(),
                format_ms(off.last_update_timestamp),
            ]);
            queues.push(json!({
                "broker": mq.broker_name,
                "queue_id": mq.queue_id,
                "min_offset": off.min_offset,
                "max_offset": off.max_offset,
                "messages": messages,
                "last_update_timestamp": off.last_update_timestamp,
            }));
        }
    }
    let mut out = Out::new();
    if json {
        let v = json!({
            "topic": topic,
            "order": route.is_order_topic(),
            "brokers": brokers,
            "queues": queues,
            "messages": total,
        });
        out.line(&v.to_string())?;
        return out.flush();
    }
    out.line(&format!(
        "topic {topic}{}",
        if route.is_order_topic() {
            " (ordered)"
        } else {
            ""
        }
    ))?;
    for b in &brokers {
        out.line(&format!(
            "  broker {} {}: {} read / {} write queues, perm {}",
            b["broker"].as_str().unwrap_or("?"),
            b["addr"].as_str().unwrap_or("(no master)"),
            b["read_queues"],
            b["write_queues"],
            b["perm"].as_str().unwrap_or("?"),
        ))?;
    }
    table.print(&mut out)?;
    out.line(&format!("total messages: {total}"))?;
    out.flush()
}

/// `rw-`, `r--`, ... (Java `PermName.perm2String` order: read, write, inherit).
fn perm_text(p: i32) -> String {
    let flag = |on: bool, c: char| if on { c } else { '-' };
    [
        flag(perm::is_readable(p), 'r'),
        flag(perm::is_writeable(p), 'w'),
        flag(p & perm::INHERIT != 0, 'x'),
    ]
    .iter()
    .collect()
}

async fn delete(admin: &Admin, topic: &str, yes: bool) -> Result<()> {
    let (_, masters) = admin.topic(topic).await?;
    if !yes {
        confirm(&format!(
            "delete topic {topic} and its messages on {}?",
            names(&masters)
        ))?;
    }
    for m in &masters {
        admin
            .instance()
            .delete_topic_in_broker(&m.addr, topic)
            .await?;
    }
    admin
        .instance()
        .delete_topic_in_namesrv(topic, None)
        .await?;
    let mut out = Out::new();
    out.line(&format!("deleted topic {topic} on {}", names(&masters)))?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_topics_are_recognised() {
        let names: BTreeSet<String> = ["DefaultCluster".to_owned(), "broker-a".to_owned()].into();
        for t in [
            "TBW102",
            "%RETRY%g",
            "%DLQ%g",
            "rmq_sys_wheel_timer",
            "DefaultCluster",
            "broker-a",
        ] {
            assert!(is_system(t, &names), "{t}");
        }
        assert!(!is_system("orders", &names));
        assert_eq!(perm_text(6), "rw-");
        assert_eq!(perm_text(4), "r--");
    }
}
