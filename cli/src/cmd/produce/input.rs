//! Where a run's messages come from (arguments, stdin, a file, generated)
//! and the task that feeds them into the send loop.

use bytes::Bytes;
use rmq::Message;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

use crate::error::{CliError, Result};

use super::args::ProduceArgs;
use super::message::{Template, generated_body};

/// Where messages come from.
pub(super) enum Source {
    Args(Vec<String>),
    Lines(Box<dyn AsyncBufRead + Unpin + Send>),
    Generated(Bytes),
}

pub(super) async fn source(args: &ProduceArgs) -> Result<Source> {
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
        priority: None,
        lite_topic: None,
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
pub(super) async fn feed(
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
