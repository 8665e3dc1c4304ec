//! The contract between the tests and the `push-child` binary, and a handle on a running child.
//!
//! The child is a push consumer in its own process, configured by environment variables
//! ([`ChildConfig`]); it appends one line per delivered message to its output file, written with
//! one `write` per listener call (so what was recorded survives a SIGKILL):
//!
//! ```text
//! <msg_id> <reconsume_times> <queue topic> <queue_id> <queue_offset>
//! ```
//!
//! Lines starting with `#` are events: `#started <client id>` once the consumer runs.
//! The child exits when its stdin closes (the test process ended) or when killed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Name server address (required).
pub const ENV_NAMESRV: &str = "RMQ_CHILD_NAMESRV";
/// Consumer group (required).
pub const ENV_GROUP: &str = "RMQ_CHILD_GROUP";
/// Topic to subscribe to with `*` (required).
pub const ENV_TOPIC: &str = "RMQ_CHILD_TOPIC";
/// Output file (required), created or appended to.
pub const ENV_OUT: &str = "RMQ_CHILD_OUT";
/// Behaviour: see [`ChildMode`] (default `record`).
pub const ENV_MODE: &str = "RMQ_CHILD_MODE";
/// Tag of the messages the listener fails while their reconsume times is 0 (optional).
pub const ENV_FAIL_TAG: &str = "RMQ_CHILD_FAIL_TAG";
/// Tag of the messages the listener always fails, so that they end in the group's DLQ (optional).
pub const ENV_DEAD_TAG: &str = "RMQ_CHILD_DEAD_TAG";
/// Max reconsume times of the consumer (optional; default the consumer's, 16).
pub const ENV_MAX_RECONSUME: &str = "RMQ_CHILD_MAX_RECONSUME";
/// Milliseconds the listener waits per call before answering (optional, default 0).
pub const ENV_DELAY_MS: &str = "RMQ_CHILD_DELAY_MS";
/// Instance name of the child's client (optional; default `child-<pid>`).
pub const ENV_INSTANCE: &str = "RMQ_CHILD_INSTANCE";
/// Tag of the messages `lite-child`'s pipeline filter drops (and commits).
pub const SKIP_TAG: &str = "skip";
/// [`ENV_MODE`] of a `lite-child` whose consumer auto-commits (every
/// [`LITE_AUTO_COMMIT_INTERVAL`]): it records each message when the stream hands it out, then
/// works on it in a `buffer_unordered(`[`LITE_PIPELINE_DEPTH`]`)` stage, and never commits itself.
pub const LITE_AUTO_COMMIT: &str = "auto-commit";
/// The auto-commit interval of a [`LITE_AUTO_COMMIT`] `lite-child`.
pub const LITE_AUTO_COMMIT_INTERVAL: Duration = Duration::from_secs(1);
/// How many messages a `lite-child` pipeline works on at once (its `buffer_unordered` stage).
pub const LITE_PIPELINE_DEPTH: usize = 8;
/// Topic field of a [`ChildRecord`] a [`LITE_AUTO_COMMIT`] `lite-child` writes when the stream
/// hands a message out.
pub const LITE_HANDED_OUT: &str = "handed-out";

/// What the child does besides recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildMode {
    /// Consume and record; the listener fails only messages with the fail tag.
    Record,
    /// As `Record`, but the child reaches the broker through an in-process fault proxy that
    /// answers SYSTEM_ERROR to every CONSUMER_SEND_MSG_BACK: failed messages cannot be handed
    /// back and stay in the process queue.
    FailSendBack,
    /// Orderly consumption (queue locks, one call per queue at a time); records every delivery,
    /// never fails.
    Orderly,
    /// Pop mode (RocketMQ 5, pop invisible time [`CHILD_POP_INVISIBLE`]): records each
    /// delivery when the listener call begins (the messages are then in hand), then waits the
    /// listener delay.
    Pop,
}

/// The pop invisible time of a [`ChildMode::Pop`] child.
pub const CHILD_POP_INVISIBLE: Duration = Duration::from_secs(5);

impl ChildMode {
    /// The value of [`ENV_MODE`].
    pub fn as_str(self) -> &'static str {
        match self {
            ChildMode::Record => "record",
            ChildMode::FailSendBack => "fail-send-back",
            ChildMode::Orderly => "orderly",
            ChildMode::Pop => "pop",
        }
    }

    /// Parses the value of [`ENV_MODE`].
    pub fn parse(s: &str) -> Option<ChildMode> {
        match s {
            "record" => Some(ChildMode::Record),
            "fail-send-back" => Some(ChildMode::FailSendBack),
            "orderly" => Some(ChildMode::Orderly),
            "pop" => Some(ChildMode::Pop),
            _ => None,
        }
    }
}

/// How to start a child.
#[derive(Debug, Clone)]
pub struct ChildConfig {
    /// Name server address.
    pub namesrv: String,
    /// Consumer group.
    pub group: String,
    /// Topic.
    pub topic: String,
    /// Output file.
    pub out: PathBuf,
    /// Behaviour.
    pub mode: ChildMode,
    /// Tag of messages to fail on first delivery.
    pub fail_tag: Option<String>,
    /// Listener delay per call.
    pub delay: Duration,
}

/// One delivery the child recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildRecord {
    /// The message id.
    pub msg_id: String,
    /// Reconsume times as delivered.
    pub reconsume_times: i32,
    /// Topic of the queue it was pulled from (`%RETRY%<group>` for retries).
    pub queue_topic: String,
    /// Queue id of the queue it was pulled from.
    pub queue_id: i32,
    /// Its offset there.
    pub queue_offset: i64,
}

impl ChildRecord {
    /// Formats the output line (without newline).
    pub fn line(&self) -> String {
        format!(
            "{} {} {} {} {}",
            self.msg_id, self.reconsume_times, self.queue_topic, self.queue_id, self.queue_offset
        )
    }

    /// Parses an output line; `None` for events and torn lines.
    pub fn parse(line: &str) -> Option<ChildRecord> {
        if line.starts_with('#') {
            return None;
        }
        let mut parts = line.split(' ');
        let rec = ChildRecord {
            msg_id: parts.next()?.to_owned(),
            reconsume_times: parts.next()?.parse().ok()?,
            queue_topic: parts.next()?.to_owned(),
            queue_id: parts.next()?.parse().ok()?,
            queue_offset: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(rec)
    }
}

/// A running `push-child`; SIGKILLed when dropped.
#[derive(Debug)]
pub struct Child {
    process: Option<std::process::Child>,
    out: PathBuf,
}

impl Child {
    /// Starts the binary at `bin` (`env!("CARGO_BIN_EXE_push-child")` in tests).
    pub fn spawn(bin: &str, config: &ChildConfig) -> Child {
        let mut cmd = Command::new(bin);
        cmd.env(ENV_NAMESRV, &config.namesrv)
            .env(ENV_GROUP, &config.group)
            .env(ENV_TOPIC, &config.topic)
            .env(ENV_OUT, &config.out)
            .env(ENV_MODE, config.mode.as_str())
            .env(ENV_DELAY_MS, config.delay.as_millis().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit());
        if let Some(tag) = &config.fail_tag {
            cmd.env(ENV_FAIL_TAG, tag);
        }
        let process = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
        Child {
            process: Some(process),
            out: config.out.clone(),
        }
    }

    /// Wraps a child process the caller started (with stdin piped, so that it ends with the test
    /// process) that writes its output lines to `out`, e.g. a `tx-child`.
    pub fn from_process(process: std::process::Child, out: PathBuf) -> Child {
        Child {
            process: Some(process),
            out,
        }
    }

    /// The output file.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// The raw output lines so far (a torn last line is dropped by the parsers).
    pub fn lines(&self) -> Vec<String> {
        match fs::read_to_string(&self.out) {
            Ok(text) => text.lines().map(str::to_owned).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// The deliveries recorded so far.
    pub fn records(&self) -> Vec<ChildRecord> {
        self.lines()
            .iter()
            .filter_map(|l| ChildRecord::parse(l))
            .collect()
    }

    /// Whether the child reported `#started`.
    pub fn started(&self) -> bool {
        self.lines().iter().any(|l| l.starts_with("#started"))
    }

    /// Fails the test if the child has exited on its own.
    pub fn assert_running(&mut self) {
        if let Some(p) = self.process.as_mut() {
            if let Ok(Some(status)) = p.try_wait() {
                panic!("the child process exited on its own: {status}");
            }
        }
    }

    /// SIGKILLs the child (`Child::kill` is SIGKILL on Unix) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut p) = self.process.take() {
            let _ = p.kill();
            let _ = p.wait();
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.kill();
    }
}
