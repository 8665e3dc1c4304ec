//! The arguments of `rmq produce`.

use std::path::PathBuf;

use clap::Args;

use crate::error::Result;

const EXAMPLES: &str = "\
Examples:
  rmq produce orders 'order 1' 'order 2'            two messages from arguments
  printf 'a\\nb\\n' | rmq produce orders             one message per stdin line
  rmq produce orders --file lines.txt --tags created
  rmq produce orders --json <<'EOF'
  {\"body\": \"paid\", \"tags\": \"paid\", \"keys\": [\"order-42\"], \"properties\": {\"region\": \"eu\"}}
  EOF
  rmq produce bench --size 1024 --count 100000 --rate 5000   load: 5000 msg/s of 1 KiB
  rmq produce alerts 'disk full' --priority 7               5.4+: a PRIORITY topic
  rmq produce orders paid --lite-topic order-42              5.5+: a LITE parent topic
  rmq produce reminders 'call' -p TIMER_DELAY_SEC=60         5.x timer message: prints its recall handle

Each sent message prints `<msg id> <topic>@<broker>#<queue> <queue offset>` on stdout
(not with --size or --quiet), and ` recall=<handle>` after it for a timer message of a
5.3.2+ broker (`rmq msg recall --topic TOPIC HANDLE` recalls it before its delivery). Progress and the summary (throughput, latency
percentiles) go to stderr: a bar on a terminal, a status line every second otherwise.
Exit code: 0 when every message was sent, 1 when some failed, 130 when interrupted.";

/// Send messages to a topic.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct ProduceArgs {
    /// Topic to send to
    pub(super) topic: String,

    /// Message bodies, one message each [default: lines of --file or stdin]
    #[arg(value_name = "MESSAGE")]
    pub(super) messages: Vec<String>,

    /// Read messages from this file, one per line (`-` = stdin)
    #[arg(short = 'f', long, value_name = "PATH", conflicts_with = "messages")]
    pub(super) file: Option<PathBuf>,

    /// Each input line (or argument) is a JSON object:
    /// {"body": "...", "tags": "...", "keys": "k" or ["k1", "k2"], "properties": {"name": "value"}}
    #[arg(long)]
    pub(super) json: bool,

    /// Generate messages of this many bytes instead of reading input (load test)
    #[arg(long, value_name = "BYTES", conflicts_with_all = ["messages", "file", "json"])]
    pub(super) size: Option<usize>,

    /// Send this many messages [default: all input; 1000 with --size]; MESSAGE
    /// arguments are sent in turn until the count is reached
    #[arg(long, value_name = "N")]
    pub(super) count: Option<u64>,

    /// At most this many messages per second [default: no limit]
    #[arg(long, value_name = "PER_SEC")]
    pub(super) rate: Option<f64>,

    /// Sends in flight at once [default: 1, 32 with --size]
    #[arg(long, value_name = "N")]
    pub(super) concurrency: Option<usize>,

    /// Tags of every message (a --json line's own tags win)
    #[arg(long)]
    pub(super) tags: Option<String>,

    /// Keys of every message, comma-separated (added to a --json line's)
    #[arg(long, value_delimiter = ',')]
    pub(super) keys: Vec<String>,

    /// A property of every message, NAME=VALUE (repeatable)
    #[arg(short = 'p', long = "property", value_name = "NAME=VALUE", value_parser = parse_property)]
    pub(super) properties: Vec<(String, String)>,

    /// Delay level of every message (1 = 1 s, 2 = 5 s, ... per the broker's messageDelayLevel)
    #[arg(long, value_name = "LEVEL")]
    pub(super) delay_level: Option<i32>,

    /// Priority of every message (RocketMQ 5.4+, 0 or more; a PRIORITY topic stores it in
    /// queue min(priority, queues - 1))
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(super) priority: Option<i32>,

    /// Lite topic of every message (RocketMQ 5.5+, the topic must be a LITE parent topic;
    /// letters, digits, '-' and '_', at most 64 bytes)
    #[arg(long, value_name = "NAME")]
    pub(super) lite_topic: Option<String>,

    /// Producer group
    #[arg(long, default_value = "rmq-cli-producer")]
    pub(super) group: String,

    /// No line per message, no progress, no summary
    #[arg(short, long)]
    pub(super) quiet: bool,
}

pub(super) fn parse_property(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("{text:?} is not NAME=VALUE")),
    }
}
