//! `lite-child`: a lite pull consumer pipeline in its own process, for the test that SIGKILLs it.
//!
//! Configured by the `push-child` environment variables (see `rmq_tests_integration::child`):
//! name server, group, topic (`*`, from the first offset) and output file. The pipeline is
//! `stream → filter → map(work) → buffer_unordered(8)`, with per-message commits
//! (`auto_commit(false)`): messages tagged [`SKIP_TAG`](rmq_tests_integration::child::SKIP_TAG)
//! are dropped by the filter (and committed there), the others are worked on for a few
//! milliseconds (a different time each, so they finish out of order), recorded with one `write`
//! each, then committed. Runs until killed, or until its stdin closes.
//!
//! With `RMQ_CHILD_MODE=auto-commit` ([`LITE_AUTO_COMMIT`]) the consumer auto-commits every
//! [`LITE_AUTO_COMMIT_INTERVAL`] instead: the pipeline is `stream → inspect(record) → map(work)
//! → buffer_unordered(8)`, each message recorded (topic field [`LITE_HANDED_OUT`]) in the
//! synchronous step in which the stream hands it out, so that the record is exactly what the
//! auto-commit counts as consumed.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use rmq_consumer_pull::{ConsumeFrom, LitePullConsumer, MessageExt};
use rmq_tests_integration::child::{
    ChildRecord, ENV_DELAY_MS, ENV_GROUP, ENV_MODE, ENV_NAMESRV, ENV_OUT, ENV_TOPIC,
    LITE_AUTO_COMMIT, LITE_AUTO_COMMIT_INTERVAL, LITE_HANDED_OUT, LITE_PIPELINE_DEPTH, SKIP_TAG,
};

fn var(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{name} is not set"))
}

fn record(out: &Mutex<File>, m: &MessageExt, what: &str) {
    let rec = ChildRecord {
        msg_id: m.msg_id.clone(),
        reconsume_times: m.reconsume_times,
        queue_topic: what.to_owned(),
        queue_id: m.queue_id,
        queue_offset: m.queue_offset,
    };
    let line = format!("{}\n", rec.line());
    let mut out = out.lock().unwrap_or_else(PoisonError::into_inner);
    if let Err(e) = out.write_all(line.as_bytes()) {
        eprintln!("lite-child: cannot write the output file: {e}");
        std::process::exit(3);
    }
}

async fn run() -> Result<(), String> {
    let namesrv = var(ENV_NAMESRV)?;
    let group = var(ENV_GROUP)?;
    let topic = var(ENV_TOPIC)?;
    let out_path = var(ENV_OUT)?;
    let max_delay_ms: u64 = match std::env::var(ENV_DELAY_MS) {
        Ok(ms) => ms
            .parse()
            .map_err(|e| format!("{ENV_DELAY_MS}={ms}: {e}"))?,
        Err(_) => 0,
    };
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&out_path)
        .map_err(|e| format!("open {out_path}: {e}"))?;
    let out = Mutex::new(file.try_clone().map_err(|e| e.to_string())?);
    let auto = std::env::var(ENV_MODE).is_ok_and(|m| m == LITE_AUTO_COMMIT);
    let consumer = LitePullConsumer::builder()
        .namesrv_addr(namesrv)
        .group(group)
        .subscribe(&topic, "*")
        .consume_from(ConsumeFrom::FirstOffset)
        .auto_commit(auto)
        .auto_commit_interval(LITE_AUTO_COMMIT_INTERVAL)
        .start()
        .await
        .map_err(|e| format!("the consumer does not start: {e}"))?;
    writeln!(file, "#started {}", consumer.client_id()).map_err(|e| e.to_string())?;
    if auto {
        return run_auto_commit(consumer, &out, max_delay_ms).await;
    }

    let (c, out) = (&consumer, &out);
    let pipeline = {
        consumer
            .stream()
            .filter_map(|m| async move {
                match m {
                    Ok(m) => Some(m),
                    Err(e) => {
                        eprintln!("lite-child: {e}");
                        None
                    }
                }
            })
            .filter(move |m| {
                let skip = m.tags() == Some(SKIP_TAG);
                let m = m.clone();
                async move {
                    if skip {
                        // Dropped on purpose: done with it.
                        record(out, &m, "skipped");
                        if let Err(e) = c.commit_message(&m).await {
                            eprintln!("lite-child: commit: {e}");
                        }
                    }
                    !skip
                }
            })
            .map(move |m| async move {
                // A different time per message: they finish out of order.
                let ms = u64::try_from(m.queue_offset).unwrap_or(0) * 7 % (max_delay_ms + 1);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                record(out, &m, "done");
                c.commit_message(&m).await
            })
            .buffer_unordered(LITE_PIPELINE_DEPTH)
            .for_each(|r| async move {
                if let Err(e) = r {
                    eprintln!("lite-child: commit: {e}");
                }
            })
    };
    let stdin_closed = tokio::task::spawn_blocking(|| {
        let mut buf = [0u8; 64];
        while matches!(std::io::stdin().read(&mut buf), Ok(n) if n > 0) {}
    });
    tokio::select! {
        () = pipeline => {}
        _ = stdin_closed => {}
    }
    consumer
        .shutdown()
        .await
        .map_err(|e| format!("shutdown: {e}"))
}

/// The auto-commit pipeline: record on hand-out, work out of order, commit nothing (the consumer
/// commits everything handed out every interval).
async fn run_auto_commit(
    consumer: LitePullConsumer,
    out: &Mutex<File>,
    max_delay_ms: u64,
) -> Result<(), String> {
    let pipeline = consumer
        .stream()
        .filter_map(|m| async move {
            match m {
                Ok(m) => Some(m),
                Err(e) => {
                    eprintln!("lite-child: {e}");
                    None
                }
            }
        })
        .inspect(|m| record(out, m, LITE_HANDED_OUT))
        .map(|m| async move {
            let ms = u64::try_from(m.queue_offset).unwrap_or(0) * 7 % (max_delay_ms + 1);
            tokio::time::sleep(Duration::from_millis(ms)).await;
        })
        .buffer_unordered(LITE_PIPELINE_DEPTH)
        .for_each(|()| async {});
    let stdin_closed = tokio::task::spawn_blocking(|| {
        let mut buf = [0u8; 64];
        while matches!(std::io::stdin().read(&mut buf), Ok(n) if n > 0) {}
    });
    tokio::select! {
        () = pipeline => {}
        _ = stdin_closed => {}
    }
    consumer
        .shutdown()
        .await
        .map_err(|e| format!("shutdown: {e}"))
}

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("lite-child: no tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lite-child: {e}");
            ExitCode::FAILURE
        }
    }
}
