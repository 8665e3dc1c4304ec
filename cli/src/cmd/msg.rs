//! `rmq msg get MSG_ID`, `rmq msg query --topic T --key K` and `rmq msg
//! recall --topic T HANDLE`.

use std::collections::BTreeSet;

use clap::Subcommand;
use rmq::protocol::header::QueryMessageRequestHeader;
use rmq::protocol::message::parse_offset_msg_id;
use rmq::{MessageExt, Producer};

use crate::admin::Admin;
use crate::cmd::Outcome;
use crate::error::{CliError, Result};
use crate::output::{Out, message_json, message_line};
use crate::settings::ConnectArgs;
use crate::time::{epoch_ms, parse_time};

/// Most messages a key query returns by default (Java tools: 64).
const DEFAULT_MAX: i32 = 64;

const EXAMPLES: &str = "\
Examples:
  rmq msg get 7F0000010000C5F400000000000A3B1C                 by offset message id
  rmq msg get AC110001475C18B4AAC2535DE7A40000 --topic orders  by the id the producer returned
  rmq msg query --topic orders --key order-42
  rmq msg query --topic orders --key order-42 --begin 1h --json
  rmq msg recall --topic reminders djEgcmVtaW5kZXJzIGJyb2tlci1hIDE3...";

/// Look messages up: by id, or by key; recall a timer message.
#[derive(Debug, Subcommand)]
#[command(after_help = EXAMPLES)]
pub(crate) enum MsgCommand {
    /// Show one message by its id
    #[command(
        after_help = "Examples:\n  rmq msg get 7F0000010000C5F400000000000A3B1C\n  rmq msg get AC110001475C18B4AAC2535DE7A40000 --topic orders --json\n\n\
MSG_ID is an offset message id (it names the broker and commit-log offset), or, with --topic,\n\
the id a producer returned (the message's UNIQ_KEY), looked up in the brokers' index."
    )]
    Get {
        /// Message id
        msg_id: String,
        /// The message's topic (needed for the id a producer returned)
        #[arg(long)]
        topic: Option<String>,
        /// One JSON object
        #[arg(long)]
        json: bool,
    },
    /// Find the messages of a topic stored with a key
    #[command(
        after_help = "Examples:\n  rmq msg query --topic orders --key order-42\n  rmq msg query --topic orders --key order-42 --begin 2024-05-01T00:00:00Z --end 2024-05-02T00:00:00Z"
    )]
    Query {
        /// Topic
        #[arg(long)]
        topic: String,
        /// Key (one of the message's KEYS)
        #[arg(long)]
        key: String,
        /// Stored at or after this time [default: any]
        #[arg(long, value_parser = parse_time)]
        begin: Option<std::time::SystemTime>,
        /// Stored at or before this time [default: now]
        #[arg(long, value_parser = parse_time)]
        end: Option<std::time::SystemTime>,
        /// At most this many messages per broker
        #[arg(long, default_value_t = DEFAULT_MAX)]
        max: i32,
        /// One JSON object per message
        #[arg(long)]
        json: bool,
    },
    /// Recall a timer message before its delivery time (RocketMQ 5.3.2+)
    #[command(
        after_help = "Examples:\n  rmq produce reminders 'call back' -p TIMER_DELAY_SEC=600   prints ... recall=HANDLE\n  rmq msg recall --topic reminders HANDLE\n\n\
HANDLE is the recall handle a send of a timer message (a delivery time) returned; the broker\n\
needs recallMessageEnable=true. Prints the recalled message's id."
    )]
    Recall {
        /// The message's topic
        #[arg(long)]
        topic: String,
        /// The recall handle
        handle: String,
        /// Producer group (the broker records it with the recall)
        #[arg(long, default_value = "rmq-cli-producer")]
        group: String,
    },
}

pub(crate) async fn run(connect: &ConnectArgs, cmd: MsgCommand) -> Result<Outcome> {
    if let MsgCommand::Recall {
        topic,
        handle,
        group,
    } = cmd
    {
        return recall(connect, &topic, &handle, &group).await;
    }
    let admin = Admin::connect(connect)?;
    let result = match cmd {
        MsgCommand::Get {
            msg_id,
            topic,
            json,
        } => get(&admin, &msg_id, topic.as_deref(), json).await,
        MsgCommand::Query {
            topic,
            key,
            begin,
            end,
            max,
            json,
        } => {
            let range = (begin.map_or(0, epoch_ms), end.map_or(i64::MAX, epoch_ms));
            query(&admin, &topic, &key, range, max, json).await
        }
        MsgCommand::Recall { .. } => Ok(()),
    };
    admin.release().await;
    result.map(|()| Outcome::Done)
}

/// Recalls the timer message of `handle` with a producer of `group`;
/// prints the message's id.
async fn recall(connect: &ConnectArgs, topic: &str, handle: &str, group: &str) -> Result<Outcome> {
    let config = connect.client_config("rmq-cli-recall")?;
    let producer = Producer::builder()
        .group(group)
        .client_config(config)
        .start()
        .await?;
    let recalled = producer.recall(topic, handle).await;
    let _ = producer.shutdown().await;
    let id = recalled?;
    let mut out = Out::new();
    out.line(&format!("recalled {id}"))?;
    out.flush()?;
    Ok(Outcome::Done)
}

fn print(msgs: &[MessageExt], json: bool) -> Result<()> {
    let mut out = Out::new();
    for m in msgs {
        let line = if json {
            message_json(m).to_string()
        } else {
            message_line(m)
        };
        out.line(&line)?;
    }
    out.flush()
}

async fn get(admin: &Admin, id: &str, topic: Option<&str>, json: bool) -> Result<()> {
    // An id whose host is a known broker is an offset id: read it there.
    let masters = admin.masters(None).await?;
    if let Ok((host, offset)) = parse_offset_msg_id(id) {
        let addr = host.to_string();
        if let Some(master) = masters.iter().find(|m| m.addr == addr) {
            match admin.instance().view_message(&addr, offset, topic).await {
                Ok(mut m) => {
                    m.broker_name.clone_from(&master.name);
                    return print(&[m], json);
                }
                Err(e) if topic.is_none() => return Err(e.into()),
                Err(_) => {} // maybe a UNIQ_KEY after all: look it up by topic
            }
        }
    }
    let Some(topic) = topic else {
        return Err(CliError::Usage(format!(
            "{id} is not the offset id of a message on a known broker; for the id a producer \
             returned, pass the topic: rmq msg get {id} --topic TOPIC"
        )));
    };
    let found = lookup(admin, topic, id, (0, i64::MAX), DEFAULT_MAX, true).await?;
    match found.into_iter().next() {
        Some(m) => print(&[m], json),
        None => Err(CliError::Refused(format!(
            "no message {id} in topic {topic} (the index may not cover it yet, or it expired)"
        ))),
    }
}

async fn query(
    admin: &Admin,
    topic: &str,
    key: &str,
    range: (i64, i64),
    max: i32,
    json: bool,
) -> Result<()> {
    let found = lookup(admin, topic, key, range, max, false).await?;
    if found.is_empty() {
        eprintln!("no message of topic {topic} has key {key:?} in that time range");
    }
    print(&found, json)
}

/// QUERY_MESSAGE on every master of the topic, keeping the real matches
/// (the index is a hash index), without duplicates, oldest first.
async fn lookup(
    admin: &Admin,
    topic: &str,
    key: &str,
    (begin, end): (i64, i64),
    max: i32,
    unique: bool,
) -> Result<Vec<MessageExt>> {
    let (_, masters) = admin.topic(topic).await?;
    let mut found = Vec::new();
    let mut seen = BTreeSet::new();
    for m in &masters {
        let header = QueryMessageRequestHeader {
            topic: topic.to_owned(),
            key: key.to_owned(),
            max_num: max.max(1),
            begin_timestamp: begin,
            end_timestamp: end,
        };
        for mut msg in admin
            .instance()
            .query_message(&m.addr, header, unique)
            .await?
        {
            msg.broker_name.clone_from(&m.name);
            let matches = if unique {
                msg.msg_id == key
            } else {
                msg.message.topic == topic && msg.message.keys().any(|k| k == key)
            };
            if matches && seen.insert(msg.offset_msg_id.clone()) {
                found.push(msg);
            }
        }
    }
    found.sort_by_key(|m| (m.store_timestamp, m.queue_offset));
    Ok(found)
}
