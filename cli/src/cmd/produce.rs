//! `rmq produce TOPIC`: messages from arguments, lines of stdin or a file
//! (raw or `--json`), or generated (`--size`) for load; rate limit,
//! concurrency, progress, and a latency summary.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Args;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rmq::{Message, Producer, SendResult};
use serde::Deserialize;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

use crate::cmd::Outcome;
use crate::error::{CliError, Result, report};
use crate::output::Out;
use crate::progress::{Latency, Progress, per_second};
use crate::settings::ConnectArgs;

/// Messages generated per run with `--size` and no `--count`.
const DEFAULT_GENERATED: u64 = 1000;
/// Sends in flight with `--size` and no `--concurrency`.
const DEFAULT_LOAD_CONCURRENCY: usize = 32;
/// Failures printed one by one before only counting.
const FAILURES_SHOWN: u64 = 10;

const EXAMPLES: &str = "\
Examples:
  rmq produce orders 'order 1' 'order 2'            two messages from arguments
  printf 'a\\nb\\n' | rmq produce orders             one message per stdin line
  rmq produce orders --file lines.txt --tags created
  rmq produce orders --json <<'EOF'
  {\"body\": \"paid\", \"tags\": \"paid\", \"keys\": [\"order-42\"], \"properties\": {\"region\": \"eu\"}}
  EOF
  rmq produce bench --size 1024 --count 100000 --rate 5000   load: 5000 msg/s of 1 KiB

Each sent message prints `<msg id> <topic>@<broker>#<queue> <queue offset>` on stdout
(not with --size or --quiet). Progress and the summary (throughput, latency
percentiles) go to stderr: a bar on a terminal, a status line every second otherwise.
Exit code: 0 when every message was sent, 1 when some failed, 130 when interrupted.";

/// Send messages to a topic.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct ProduceArgs {
    /// Topic to send to
    topic: String,

    /// Message bodies, one message each [default: lines of --file or stdin]
    #[arg(value_name = "MESSAGE")]
    messages: Vec<String>,

    /// Read messages from this file, one per line (`-` = stdin)
    #[arg(short = 'f', long, value_name = "PATH", conflicts_with = "messages")]
    file: Option<PathBuf>,

    /// Each input line (or argument) is a JSON object:
    /// {"body": "...", "tags": "...", "keys": "k" or ["k1", "k2"], "properties": {"name": "value"}}
    #[arg(long)]
    json: bool,

    /// Generate messages of this many bytes instead of reading input (load test)
    #[arg(long, value_name = "BYTES", conflicts_with_all = ["messages", "file", "json"])]
    size: Option<usize>,

    /// Send this many messages [default: all input; 1000 with --size]; MESSAGE
    /// arguments are sent in turn until the count is reached
    #[arg(long, value_name = "N")]
    count: Option<u64>,

    /// At most this many messages per second [default: no limit]
    #[arg(long, value_name = "PER_SEC")]
    rate: Option<f64>,

    /// Sends in flight at once [default: 1, 32 with --size]
    #[arg(long, value_name = "N")]
    concurrency: Option<usize>,

    /// Tags of every message (a --json line's own tags win)
    #[arg(long)]
    tags: Option<String>,

    /// Keys of every message, comma-separated (added to a --json line's)
    #[arg(long, value_delimiter = ',')]
    keys: Vec<String>,

    /// A property of every message, NAME=VALUE (repeatable)
    #[arg(short = 'p', long = "property", value_name = "NAME=VALUE", value_parser = parse_property)]
    properties: Vec<(String, String)>,

    /// Delay level of every message (1 = 1 s, 2 = 5 s, ... per the broker's messageDelayLevel)
    #[arg(long, value_name = "LEVEL")]
    delay_level: Option<i32>,

    /// Producer group
    #[arg(long, default_value = "rmq-cli-producer")]
    group: String,

    /// No line per message, no progress, no summary
    #[arg(short, long)]
    quiet: bool,
}

fn parse_property(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("{text:?} is not NAME=VALUE")),
    }
}

/// One `--json` input line.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonMessage {
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

/// What a run sent.
#[derive(Debug, Default)]
pub(crate) struct Sent {
    pub(crate) ok: u64,
    pub(crate) failed: u64,
    pub(crate) bytes: u64,
    pub(crate) first_error: Option<Box<rmq::Error>>,
    pub(crate) elapsed: Duration,
    pub(crate) latency: Option<Latency>,
    pub(crate) interrupted: bool,
}

impl Sent {
    /// `sent 1000 messages (0 failed) in 1.02 s: 980 msg/s, 0.96 MiB/s`.
    #[allow(clippy::cast_precision_loss)]
    pub(crate) fn summary(&self) -> String {
        let secs = self.elapsed.as_secs_f64();
        let mib = if secs > 0.0 {
            self.bytes as f64 / secs / (1024.0 * 1024.0)
        } else {
            0.0
        };
        let mut s = format!(
            "sent {} messages ({} failed) in {:.2} s: {:.0} msg/s, {:.2} MiB/s",
            self.ok,
            self.failed,
            secs,
            per_second(self.ok, self.elapsed),
            mib
        );
        if self.interrupted {
            s.push_str(" (interrupted)");
        }
        if let Some(l) = &self.latency {
            s.push_str("\nlatency: ");
            s.push_str(&l.summary());
        }
        s
    }
}

/// Where messages come from.
enum Source {
    Args(Vec<String>),
    Lines(Box<dyn AsyncBufRead + Unpin + Send>),
    Generated(Bytes),
}

pub(crate) async fn run(connect: &ConnectArgs, args: ProduceArgs) -> Result<Outcome> {
    let source = source(&args).await?;
    let generated = matches!(source, Source::Generated(_));
    let count = args
        .count
        .or_else(|| generated.then_some(DEFAULT_GENERATED));
    let total = match &source {
        Source::Args(m) => Some(count.unwrap_or(m.len() as u64)),
        _ => count,
    };
    let concurrency = args
        .concurrency
        .unwrap_or(if generated {
            DEFAULT_LOAD_CONCURRENCY
        } else {
            1
        })
        .max(1);
    if let Some(r) = args.rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(CliError::Usage(format!(
                "--rate {r}: must be a positive number"
            )));
        }
    }
    let config = connect.client_config("rmq-cli-producer")?;
    let producer = Producer::builder()
        .group(&args.group)
        .client_config(config)
        .start()
        .await?;
    let template = Template::new(&args);
    let (tx, rx) = mpsc::channel(1024);
    let feeder = tokio::spawn(feed(source, template, total, args.json, tx));
    let print_each = !generated && !args.quiet;
    let outcome = send_all(
        &producer,
        rx,
        total,
        concurrency,
        args.rate,
        print_each,
        args.quiet,
    )
    .await;
    feeder.abort();
    let _ = producer.shutdown().await;
    let sent = outcome?;
    if !args.quiet {
        eprintln!("{}", sent.summary());
    }
    finish(sent)
}

/// The exit of a produce run: interrupted (130), failures (1) or done.
pub(crate) fn finish(sent: Sent) -> Result<Outcome> {
    if let Some(first) = sent.first_error {
        return Err(CliError::SendFailed {
            failed: sent.failed,
            total: sent.ok + sent.failed,
            first,
        });
    }
    Ok(if sent.interrupted {
        Outcome::Interrupted
    } else {
        Outcome::Done
    })
}

async fn source(args: &ProduceArgs) -> Result<Source> {
    if let Some(size) = args.size {
        return Ok(Source::Generated(generated_body(size)));
    }
    if !args.messages.is_empty() {
        return Ok(Source::Args(args.messages.clone()));
    }
    match args.file.as_deref() {
        Some(p) if p.as_os_str() != "-" => {
            let file = tokio::fs::File::open(p)
                .await
                .map_err(|e| CliError::io(format!("cannot open {}", p.display()), e))?;
            Ok(Source::Lines(Box::new(BufReader::new(file))))
        }
        _ => {
            if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                eprintln!("reading messages from the terminal, one per line; end with Ctrl-D");
            }
            Ok(Source::Lines(Box::new(BufReader::new(tokio::io::stdin()))))
        }
    }
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
struct Template {
    topic: String,
    tags: Option<String>,
    keys: Vec<String>,
    properties: Vec<(String, String)>,
    delay_level: Option<i32>,
}

impl Template {
    fn new(args: &ProduceArgs) -> Self {
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
        }
    }

    fn message(&self, body: Bytes, json: Option<JsonMessage>) -> Message {
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
        msg
    }

    fn parse(&self, text: &str, json: bool, line: u64) -> Result<Message> {
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

/// `count` generated messages of `size` bytes for `topic`, fed into a
/// bounded channel by a task (stopped when the receiver is dropped).
pub(crate) fn spawn_generated(
    topic: &str,
    size: usize,
    count: u64,
) -> mpsc::Receiver<Result<Message>> {
    let template = Template {
        topic: topic.to_owned(),
        tags: None,
        keys: Vec::new(),
        properties: Vec::new(),
        delay_level: None,
    };
    let (tx, rx) = mpsc::channel(1024);
    tokio::spawn(feed(
        Source::Generated(generated_body(size)),
        template,
        Some(count),
        false,
        tx,
    ));
    rx
}

/// Reads the source into `tx` (bounded: reading waits for sending).
async fn feed(
    source: Source,
    template: Template,
    total: Option<u64>,
    json: bool,
    tx: mpsc::Sender<Result<Message>>,
) {
    let limit = total.unwrap_or(u64::MAX);
    let mut n = 0_u64;
    match source {
        Source::Generated(body) => {
            while n < limit {
                if tx
                    .send(Ok(template.message(body.clone(), None)))
                    .await
                    .is_err()
                {
                    return;
                }
                n += 1;
            }
        }
        Source::Args(items) => {
            for text in items.iter().cycle() {
                if n >= limit {
                    return;
                }
                n += 1;
                if tx.send(template.parse(text, json, n)).await.is_err() {
                    return;
                }
            }
        }
        Source::Lines(reader) => {
            let mut lines = reader.lines();
            while n < limit {
                let line = match lines.next_line().await {
                    Ok(Some(l)) => l,
                    Ok(None) => return,
                    Err(e) => {
                        let _ = tx.send(Err(CliError::io("cannot read the input", e))).await;
                        return;
                    }
                };
                let text = line.strip_suffix('\r').unwrap_or(&line);
                if text.is_empty() && json {
                    continue;
                }
                n += 1;
                if tx.send(template.parse(text, json, n)).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Sends what arrives on `rx`, `concurrency` at a time, at most `rate` per
/// second, until the input ends or Ctrl-C; then waits for the sends in
/// flight.
pub(crate) async fn send_all(
    producer: &Producer,
    mut rx: mpsc::Receiver<Result<Message>>,
    total: Option<u64>,
    concurrency: usize,
    rate: Option<f64>,
    print_each: bool,
    quiet: bool,
) -> Result<Sent> {
    let mut progress = Progress::new("produce", total, quiet);
    let mut out = Out::new();
    let mut sent = Sent::default();
    let mut latency = Latency::new();
    let interval = rate.map(|r| Duration::from_secs_f64(1.0 / r));
    let started = Instant::now();
    let tokio_start = tokio::time::Instant::now();
    let mut issued: u32 = 0;
    let mut inflight = FuturesUnordered::new();
    let mut input_done = false;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut input_error = None;
    loop {
        if input_done && inflight.is_empty() {
            break;
        }
        tokio::select! {
            biased;
            _ = &mut ctrl_c, if !sent.interrupted => {
                sent.interrupted = true;
                input_done = true;
            }
            Some((result, took, size)) = inflight.next(), if !inflight.is_empty() => {
                record(&mut sent, &mut latency, result, took, size, print_each, &progress, &mut out)?;
                progress.set(sent.ok + sent.failed);
            }
            next = rx.recv(), if !input_done && inflight.len() < concurrency => match next {
                Some(Ok(msg)) => {
                    if let Some(step) = interval {
                        tokio::time::sleep_until(tokio_start + step.saturating_mul(issued)).await;
                    }
                    issued = issued.saturating_add(1);
                    let size = msg.body.len() as u64;
                    let producer = producer.clone();
                    inflight.push(async move {
                        let t = Instant::now();
                        let r = producer.send(msg).await;
                        (r, t.elapsed(), size)
                    });
                }
                Some(Err(e)) => {
                    input_error = Some(e);
                    input_done = true;
                }
                None => input_done = true,
            },
            else => break,
        }
    }
    progress.finish();
    out.flush()?;
    sent.elapsed = started.elapsed();
    if latency.count() > 0 {
        sent.latency = Some(latency);
    }
    match input_error {
        Some(e) => {
            eprintln!("{}", sent.summary());
            Err(e)
        }
        None => Ok(sent),
    }
}

#[allow(clippy::too_many_arguments)]
fn record(
    sent: &mut Sent,
    latency: &mut Latency,
    result: std::result::Result<SendResult, rmq::producer::Error>,
    took: Duration,
    size: u64,
    print_each: bool,
    progress: &Progress,
    out: &mut Out,
) -> Result<()> {
    match result {
        Ok(r) => {
            sent.ok += 1;
            sent.bytes += size;
            latency.record(took);
            if print_each {
                let line = format!("{} {} {}", r.msg_id, r.message_queue, r.queue_offset);
                progress.suspend(|| out.line(&line))?;
            }
        }
        Err(e) => {
            sent.failed += 1;
            let e = rmq::Error::from(e);
            if sent.failed <= FAILURES_SHOWN {
                progress.suspend(|| eprintln!("send failed: {}", report(&e)));
            } else if sent.failed == FAILURES_SHOWN + 1 {
                progress.suspend(|| eprintln!("(further failures are only counted)"));
            }
            sent.first_error.get_or_insert(Box::new(e));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        args: ProduceArgs,
    }

    fn template(extra: &[&str]) -> Template {
        let mut argv = vec!["x", "T"];
        argv.extend_from_slice(extra);
        Template::new(&Wrap::parse_from(argv).args)
    }

    #[test]
    fn json_lines_become_messages() {
        let t = template(&["--tags", "default", "--keys", "k0", "-p", "a=1"]);
        let m = t
            .parse(
                r#"{"body":"paid","keys":["k1","k2"],"properties":{"region":"eu"}}"#,
                true,
                1,
            )
            .unwrap();
        assert_eq!(m.body, Bytes::from("paid"));
        assert_eq!(m.tags(), Some("default"));
        assert_eq!(m.keys().collect::<Vec<_>>(), ["k1", "k2", "k0"]);
        assert_eq!(m.property("region"), Some("eu"));
        assert_eq!(m.property("a"), Some("1"));
        let own = t
            .parse(r#"{"body":"x","tags":"mine","keys":"one"}"#, true, 2)
            .unwrap();
        assert_eq!(own.tags(), Some("mine"));
        let bad = t.parse("{\"bod\": 1}", true, 7).unwrap_err();
        assert!(bad.to_string().starts_with("line 7:"), "{bad}");
        let raw = t.parse("{not json}", false, 1).unwrap();
        assert_eq!(raw.body, Bytes::from("{not json}"));
    }

    #[test]
    fn generated_bodies_have_the_size() {
        assert_eq!(generated_body(0).len(), 0);
        assert_eq!(generated_body(1000).len(), 1000);
        assert!(parse_property("novalue").is_err());
        assert_eq!(parse_property("a=b=c").unwrap(), ("a".into(), "b=c".into()));
    }
}
