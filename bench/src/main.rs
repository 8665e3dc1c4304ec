//! `rmq-bench`: the rmq side of the benchmark harness (`bench/run.sh`).
//!
//! ```text
//! rmq-bench create-topic    --topic T[,T2...] --queues Q [--broker-addr A[,B...]] [--attributes +message.type=NORMAL]
//! rmq-bench preload         --topic T[,T2...] --count N --size S [--batch 32] [--tasks 8]
//! rmq-bench produce         --topic T --count N --size S --mode sync|async|tx [--tasks 64] [--inflight 1000] [--endpoint E] [--batching 1]
//! rmq-bench latency-produce --topic T --rate R --duration-s D [--warmup-s 2] [--size S]
//! rmq-bench drain-push      --topic T[,T2...] --group G --expect N [--threads 20] [--batch 32] [--latency-skip K] [--pop 1]
//! rmq-bench idle-push       --topic T[,T2...] --group G --expect-queues Q [--idle-s 5]
//! rmq-bench fake-drain      --consumer push|pull --count N [--size S] [--queues Q] [--threads 20] [--batch 32]
//! rmq-bench drain-pull      --topic T --group G --expect N [--batch 32]
//! rmq-bench drain-simple    --topic T --group G --expect N [--threads 20] [--batch 32] [--endpoint E]
//! rmq-bench set-pop-mode    --topic T --group G
//! rmq-bench raw-pull        --topic T --group G --expect N [--batch 32]
//! rmq-bench raw-send        --topic T --count N [--size S] [--batch-messages 32] [--inflight 1000]
//! rmq-bench rtt-floor       --client single|tasks|direct|callers --count N [--rate 5000] [--queues 8] [--workers W]
//! rmq-bench chart           --input RESULTS.json --output CHART.svg
//! ```
//! Every mode accepts `--namesrv` (default `NAMESRV_ADDR`, else
//! 127.0.0.1:9876) and `--runtime multi-thread|current-thread` (the tokio
//! runtime the mode runs on: the default `#[tokio::main]` one, a worker per
//! core, or one thread; `fake-drain` builds its own) and prints one
//! `RESULT {json}` line; consumers print
//! `READY` once started. `--endpoint HOST:PORT` (produce, drain-simple) goes
//! through the RocketMQ 5.x proxy's gRPC port instead of the brokers. See
//! bench/README.md.

mod args;
mod chart;
mod drain;
mod error;
mod fake_drain;
mod procfs;
mod produce;
mod raw_send;
mod rtt_floor;
mod stats;
mod topic;

use args::Flags;
use error::{BenchError, Result};

const USAGE: &str = "usage: rmq-bench <create-topic|preload|produce|latency-produce|drain-push|idle-push|drain-pull|drain-simple|fake-drain|set-pop-mode|raw-pull|raw-send|rtt-floor|chart> --flag value ... (see bench/README.md)";

async fn run(mode: &str, flags: &Flags) -> Result<()> {
    match mode {
        "create-topic" => topic::create_topic(flags).await,
        "preload" => produce::preload(flags).await,
        "produce" => produce::produce(flags).await,
        "latency-produce" => produce::latency_produce(flags).await,
        "drain-push" => drain::drain_push(flags).await,
        "idle-push" => drain::idle_push(flags).await,
        "drain-pull" => drain::drain_pull(flags).await,
        "drain-simple" => drain::drain_simple(flags).await,
        "set-pop-mode" => drain::set_pop_mode(flags).await,
        "raw-pull" => drain::raw_pull(flags).await,
        "raw-send" => raw_send::raw_send(flags).await,
        "chart" => chart::chart(flags),
        other => Err(BenchError::Args(format!("unknown mode {other:?}; {USAGE}"))),
    }
}

fn main() -> std::process::ExitCode {
    let mut argv = std::env::args().skip(1);
    let Some(mode) = argv.next() else {
        eprintln!("{USAGE}");
        return std::process::ExitCode::from(2);
    };
    let outcome = Flags::parse(argv).and_then(|flags| {
        if mode == "fake-drain" {
            // Builds its own runtimes: one for the in-process fake broker, one for the client.
            return fake_drain::fake_drain(&flags);
        }
        if mode == "rtt-floor" {
            // Builds its own client runtime; its server runs on plain threads.
            return rtt_floor::rtt_floor(&flags);
        }
        let runtime = flags
            .runtime_builder()?
            .enable_all()
            .build()
            .map_err(|e| BenchError::Other(format!("cannot start the tokio runtime: {e}")))?;
        runtime.block_on(run(&mode, &flags))
    });
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rmq-bench {mode}: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
