//! `tx-child`: a transactional producer in its own process, for tests that SIGKILL a producer
//! between its half message and END_TRANSACTION (see `rmq_tests_integration::tx`).
//!
//! Send mode begins one transaction per body; each `execute` reports `#half` and never returns.
//! Answer mode answers check-backs with `decide(body)` and reports `#check`. Both heartbeat to the
//! topic's broker from the start and run until killed or until stdin closes.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use rmq_producer::{
    Message, MessageExt, Producer, TransactionListener, TransactionState, async_trait,
};
use rmq_tests_integration::child::{ENV_GROUP, ENV_NAMESRV, ENV_OUT, ENV_TOPIC};
use rmq_tests_integration::tx::{ENV_TX_BODIES, ENV_TX_MODE, TxChildMode, decide, own_client};

struct ChildTx {
    out: Mutex<File>,
}

impl ChildTx {
    /// One `write` per line, so what was reported survives a SIGKILL.
    fn report(&self, line: String) {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = out.write_all(format!("{line}\n").as_bytes()) {
            eprintln!("tx-child: cannot write the output file: {e}");
            std::process::exit(3);
        }
    }
}

#[async_trait]
impl TransactionListener for ChildTx {
    async fn execute(&self, msg: &Message, (): ()) -> TransactionState {
        let body = String::from_utf8_lossy(&msg.body);
        self.report(format!("#half {} {body}", msg.unique_key().unwrap_or("-")));
        std::future::pending().await
    }

    async fn check(&self, msg: &MessageExt) -> TransactionState {
        let state = decide(&msg.body);
        let body = String::from_utf8_lossy(&msg.body);
        self.report(format!("#check {} {body} {state}", msg.msg_id));
        state
    }
}

fn var(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{name} is not set"))
}

async fn run() -> Result<(), String> {
    let namesrv = var(ENV_NAMESRV)?;
    let group = var(ENV_GROUP)?;
    let topic = var(ENV_TOPIC)?;
    let out_path = var(ENV_OUT)?;
    let mode = var(ENV_TX_MODE)?;
    let mode =
        TxChildMode::parse(&mode).ok_or_else(|| format!("{ENV_TX_MODE}={mode} is unknown"))?;
    let bodies = std::env::var(ENV_TX_BODIES).unwrap_or_default();

    let out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&out_path)
        .map_err(|e| format!("open {out_path}: {e}"))?;
    let listener = Arc::new(ChildTx {
        out: Mutex::new(out),
    });
    let producer = Producer::builder()
        .group(&group)
        .client_config(own_client(&namesrv, "tx_child"))
        .transaction_listener(Arc::clone(&listener))
        .topics([topic.clone()])
        .start()
        .await
        .map_err(|e| format!("the transactional producer does not start: {e}"))?;
    listener.report(format!("#started {}", producer.producer().client_id()));
    if mode == TxChildMode::Send {
        for body in bodies.split(',').filter(|b| !b.is_empty()) {
            let producer = producer.clone();
            let msg = Message::new(&topic, body.to_owned());
            tokio::spawn(async move {
                if let Err(e) = producer.send_in_transaction(msg, ()).await {
                    eprintln!("tx-child: send_in_transaction: {e}");
                    std::process::exit(4);
                }
            });
        }
    }

    // Until the test process goes away (stdin closes) or kills us.
    let _ = tokio::task::spawn_blocking(|| {
        let mut buf = [0u8; 64];
        while matches!(std::io::stdin().read(&mut buf), Ok(n) if n > 0) {}
    })
    .await;
    let _ = producer.shutdown().await;
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tx-child: {e}");
            ExitCode::FAILURE
        }
    }
}
