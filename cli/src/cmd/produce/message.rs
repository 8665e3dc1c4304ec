//! How an input line (raw or `--json`) or a generated body becomes a
//! message: the `--json` line format and the run's [`Template`].

use std::collections::BTreeMap;

use bytes::Bytes;
use rmq::Message;
use serde::Deserialize;

use crate::error::{CliError, Result};

use super::args::ProduceArgs;

/// One `--json` input line.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct JsonMessage {
    body: String,
    tags: Option<String>,
    keys: Option<Keys>,
    #[serde(default)]
    properties: BTreeMap<String, String>,
    delay_level: Option<i32>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Keys {
    One(String),
    Many(Vec<String>),
}

/// `size` bytes of printable filler, shared by every generated message.
pub(crate) fn generated_body(size: usize) -> Bytes {
    const PATTERN: &[u8] = b"rmq-bench-payload-0123456789abcdefghijklmnopqrstuvwxyz ";
    Bytes::from(
        PATTERN
            .iter()
            .copied()
            .cycle()
            .take(size)
            .collect::<Vec<u8>>(),
    )
}

/// What every message of the run gets.
#[derive(Debug, Clone)]
pub(super) struct Template {
    pub(super) topic: String,
    pub(super) tags: Option<String>,
    pub(super) keys: Vec<String>,
    pub(super) properties: Vec<(String, String)>,
    pub(super) delay_level: Option<i32>,
    pub(super) priority: Option<i32>,
    pub(super) lite_topic: Option<String>,
}

impl Template {
    pub(super) fn new(args: &ProduceArgs) -> Self {
        Template {
            topic: args.topic.clone(),
            tags: args.tags.clone(),
            keys: args
                .keys
                .iter()
                .filter(|k| !k.is_empty())
                .cloned()
                .collect(),
            properties: args.properties.clone(),
            delay_level: args.delay_level,
            priority: args.priority,
            lite_topic: args.lite_topic.clone(),
        }
    }

    pub(super) fn message(&self, body: Bytes, json: Option<JsonMessage>) -> Message {
        let mut msg = Message::new(self.topic.clone(), body);
        for (k, v) in &self.properties {
            msg.set_property(k.clone(), v.clone());
        }
        let mut keys = self.keys.clone();
        let mut tags = self.tags.clone();
        let mut delay = self.delay_level;
        if let Some(j) = json {
            for (k, v) in j.properties {
                msg.set_property(k, v);
            }
            match j.keys {
                Some(Keys::One(k)) => keys.insert(0, k),
                Some(Keys::Many(ks)) => keys.splice(0..0, ks).for_each(drop),
                None => {}
            }
            tags = j.tags.or(tags);
            delay = j.delay_level.or(delay);
        }
        if let Some(t) = tags {
            msg = msg.with_tags(t);
        }
        if !keys.is_empty() {
            msg = msg.with_keys(keys);
        }
        if let Some(level) = delay {
            msg = msg.with_delay_level(level);
        }
        if let Some(p) = self.priority {
            msg = msg.with_priority(p);
        }
        if let Some(l) = &self.lite_topic {
            msg = msg.with_lite_topic(l.clone());
        }
        msg
    }

    pub(super) fn parse(&self, text: &str, json: bool, line: u64) -> Result<Message> {
        if json {
            let j: JsonMessage =
                serde_json::from_str(text).map_err(|source| CliError::BadJson { line, source })?;
            let body = Bytes::from(j.body.clone().into_bytes());
            Ok(self.message(body, Some(j)))
        } else {
            Ok(self.message(Bytes::from(text.to_owned()), None))
        }
    }
}
