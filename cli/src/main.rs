//! `rmq`: produce, consume, tail and administer Apache RocketMQ from the
//! command line, with rmq's own client (no JVM). See `rmq --help` and
//! `cli/README.md`.
#![forbid(unsafe_code)]

mod admin;
mod cmd;
mod error;
mod output;
mod progress;
mod settings;
mod time;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::cmd::Outcome;
use crate::error::{CliError, report};
use crate::settings::ConnectArgs;

const EXAMPLES: &str = "\
Examples:
  rmq --namesrv 127.0.0.1:9876 cluster
  export NAMESRV_ADDR=127.0.0.1:9876
  rmq topic create orders --queues 8
  echo 'order created' | rmq produce orders --tags created
  rmq consume orders --group billing --from first
  rmq tail orders --json
  rmq group lag billing --watch
  rmq group reset billing --to 1h
  rmq msg query --topic orders --key order-42
  rmq bench --count 100000
  rmq completions bash > ~/.local/share/bash-completion/completions/rmq

Name servers: --namesrv, else the profile chosen with --profile (in
~/.config/rmq/config.toml), else NAMESRV_ADDR, else the file's default_profile.
Errors print their whole cause chain; the exit code is non-zero.";

/// A command-line client for Apache RocketMQ.
#[derive(Debug, Parser)]
#[command(name = "rmq", version, after_help = EXAMPLES, propagate_version = true)]
struct Cli {
    #[command(flatten)]
    connect: ConnectArgs,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Send messages (arguments, stdin lines, a file, JSON lines, or generated load)
    Produce(cmd::produce::ProduceArgs),
    /// Consume as a member of a consumer group, committing offsets
    Consume(cmd::consume::ConsumeArgs),
    /// Print a topic's messages as they arrive, committing nothing
    Tail(cmd::consume::TailArgs),
    /// Topics: list, create, describe, delete
    Topic {
        #[command(subcommand)]
        command: cmd::topic::TopicCommand,
    },
    /// Consumer groups: lag, reset
    Group {
        #[command(subcommand)]
        command: cmd::group::GroupCommand,
    },
    /// Messages: get by id, query by key, recall a timer message
    Msg {
        #[command(subcommand)]
        command: cmd::msg::MsgCommand,
    },
    /// Show the clusters, brokers and their addresses
    Cluster(cmd::cluster::ClusterArgs),
    /// Measure produce and consume throughput on a scratch topic
    Bench(cmd::bench::BenchArgs),
    /// Print a shell completion script
    #[command(
        after_help = "Examples:\n  rmq completions bash > ~/.local/share/bash-completion/completions/rmq\n  rmq completions zsh > \"${fpath[1]}/_rmq\"\n  rmq completions fish > ~/.config/fish/completions/rmq.fish"
    )]
    Completions {
        /// The shell
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Completions { shell } = cli.command {
        clap_complete::generate(shell, &mut Cli::command(), "rmq", &mut std::io::stdout());
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!(
                "{}",
                report(&CliError::io("cannot start the async runtime", e))
            );
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::Interrupted) => ExitCode::from(130),
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", report(&e));
            ExitCode::from(e.exit_code())
        }
    }
}

async fn run(cli: Cli) -> error::Result<Outcome> {
    let connect = &cli.connect;
    match cli.command {
        Command::Produce(args) => cmd::produce::run(connect, args).await,
        Command::Consume(args) => cmd::consume::consume(connect, args).await,
        Command::Tail(args) => cmd::consume::tail(connect, args).await,
        Command::Topic { command } => cmd::topic::run(connect, command).await,
        Command::Group { command } => cmd::group::run(connect, command).await,
        Command::Msg { command } => cmd::msg::run(connect, command).await,
        Command::Cluster(args) => cmd::cluster::run(connect, args).await,
        Command::Bench(args) => cmd::bench::run(connect, args).await,
        Command::Completions { .. } => Ok(Outcome::Done),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
