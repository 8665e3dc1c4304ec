//! `rmq produce` itself: connect, pick the source, send, report.

use rmq::Producer;
use tokio::sync::mpsc;

use crate::cmd::Outcome;
use crate::error::{CliError, Result};
use crate::settings::ConnectArgs;

use super::args::ProduceArgs;
use super::input::{Source, feed, source};
use super::message::Template;
use super::send::{finish, send_all};

/// Messages generated per run with `--size` and no `--count`.
const DEFAULT_GENERATED: u64 = 1000;
/// Sends in flight with `--size` and no `--concurrency`.
const DEFAULT_LOAD_CONCURRENCY: usize = 32;

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
