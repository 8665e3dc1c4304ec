//! Transactional producers for the tests (`tests/tx_*.rs`, `tx-child`): a listener whose `execute`
//! does what the test's [`Local`] says and whose `check` decides by the message body
//! ([`decide`]), recording every check; broker-side probes (producer connections, broker config);
//! the contract with the `tx-child` binary ([`TxChildMode`], [`spawn_tx_child`]).
//!
//! `tx-child` is a transactional producer in its own process, configured by environment
//! variables; it appends one line per event to its output file:
//!
//! ```text
//! #started <client id>                 the producer runs (heartbeats to the topic's broker)
//! #half <msg_id> <body>                send mode: the half message is stored, execute now hangs
//! #check <msg_id> <body> <state>       answer mode: a check-back answered with decide(body)
//! ```
//!
//! It runs until its stdin closes (the test process ended) or it is killed.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmq_client_core::ClientConfig;
use rmq_producer::{
    Message, MessageExt, Producer, TransactionListener, TransactionProducer, TransactionState,
    async_trait,
};
use rmq_protocol::header::EmptyHeader;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use crate::Env;
use crate::child::{Child, ENV_GROUP, ENV_NAMESRV, ENV_OUT, ENV_TOPIC};

/// `tx-child`: what it does ([`TxChildMode`]).
pub const ENV_TX_MODE: &str = "RMQ_TX_CHILD_MODE";
/// `tx-child` in send mode: the bodies of the transactions to begin, `,`-separated.
pub const ENV_TX_BODIES: &str = "RMQ_TX_CHILD_BODIES";

/// What a `tx-child` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxChildMode {
    /// Begins one transaction per body; every `execute` reports `#half` and never returns, so no
    /// END_TRANSACTION is ever sent.
    Send,
    /// Answers check-backs with [`decide`], reporting each.
    Answer,
}

impl TxChildMode {
    /// The value of [`ENV_TX_MODE`].
    pub fn as_str(self) -> &'static str {
        match self {
            TxChildMode::Send => "send",
            TxChildMode::Answer => "answer",
        }
    }

    /// Parses the value of [`ENV_TX_MODE`].
    pub fn parse(s: &str) -> Option<TxChildMode> {
        match s {
            "send" => Some(TxChildMode::Send),
            "answer" => Some(TxChildMode::Answer),
            _ => None,
        }
    }
}

/// Starts the `tx-child` binary at `bin` (`env!("CARGO_BIN_EXE_tx-child")`) as a producer of
/// `group` on `topic`, writing to `out`; SIGKILLed when the handle drops.
pub fn spawn_tx_child(
    bin: &str,
    namesrv: &str,
    group: &str,
    topic: &str,
    out: &Path,
    mode: TxChildMode,
    bodies: &[&str],
) -> Child {
    let process = Command::new(bin)
        .env(ENV_NAMESRV, namesrv)
        .env(ENV_GROUP, group)
        .env(ENV_TOPIC, topic)
        .env(ENV_OUT, out)
        .env(ENV_TX_MODE, mode.as_str())
        .env(ENV_TX_BODIES, bodies.join(","))
        .stdin(Stdio::piped())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
    Child::from_process(process, out.to_owned())
}

/// The `#<event> ...` lines of a child's output, split into words.
pub fn events(child: &Child, event: &str) -> Vec<Vec<String>> {
    child
        .lines()
        .iter()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| l.split(' ').map(str::to_owned).collect::<Vec<_>>())
        .filter(|w| w.first().is_some_and(|e| e == event))
        .collect()
}

/// What `execute` does in a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Local {
    /// Answers `Commit`.
    Commit,
    /// Answers `Rollback`.
    Rollback,
    /// Answers `Unknown`.
    Unknown,
    /// Panics.
    Panic,
    /// Never returns (the producer's execute timeout ends it).
    Hang,
}

/// The check-back rule of the tests, shared by every producer of a group (also the Java peer's):
/// a body starting with `commit` commits, `rollback` rolls back, anything else is unknown.
pub fn decide(body: &[u8]) -> TransactionState {
    if body.starts_with(b"commit") {
        TransactionState::Commit
    } else if body.starts_with(b"rollback") {
        TransactionState::Rollback
    } else {
        TransactionState::Unknown
    }
}

/// Body prefix whose check waits for [`TxLog::open_gate`] before it commits.
pub const GATED: &str = "gated";

/// One check-back a listener answered.
#[derive(Debug, Clone)]
pub struct Check {
    /// The message id (`UNIQ_KEY`).
    pub msg_id: String,
    /// The body, as text.
    pub body: String,
    /// The topic the check named.
    pub topic: String,
    /// The answer.
    pub state: TransactionState,
    /// When the check began.
    pub at: Instant,
}

/// The checks a [`TxListener`] saw; waiters wake on every change.
#[derive(Debug)]
pub struct TxLog {
    checks: Mutex<Vec<Check>>,
    /// Checks that began (a gated one is recorded here before it waits).
    started: Mutex<Vec<String>>,
    changed: watch::Sender<u64>,
    gate: Notify,
}

impl Default for TxLog {
    fn default() -> Self {
        TxLog {
            checks: Mutex::new(Vec::new()),
            started: Mutex::new(Vec::new()),
            changed: watch::Sender::new(0),
            gate: Notify::new(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl TxLog {
    /// An empty log.
    pub fn new() -> Arc<TxLog> {
        Arc::new(TxLog::default())
    }

    /// Every answered check so far.
    pub fn checks(&self) -> Vec<Check> {
        lock(&self.checks).clone()
    }

    /// The answered checks of `msg_id`.
    pub fn checks_of(&self, msg_id: &str) -> Vec<Check> {
        lock(&self.checks)
            .iter()
            .filter(|c| c.msg_id == msg_id)
            .cloned()
            .collect()
    }

    /// Lets a gated check go on (one waiting check, or the next one to come).
    pub fn open_gate(&self) {
        self.gate.notify_one();
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    async fn wait(&self, limit: Duration, what: &str, mut done: impl FnMut(&TxLog) -> bool) {
        let deadline = Instant::now() + limit;
        let mut rx = self.changed.subscribe();
        loop {
            rx.mark_unchanged();
            if done(self) {
                return;
            }
            if tokio::time::timeout_at(deadline, rx.changed())
                .await
                .is_err()
                && !done(self)
            {
                panic!(
                    "{what}: not within {limit:?}; checks so far: {:?}",
                    self.checks()
                );
            }
        }
    }

    /// Waits until `msg_id` was checked and answered; returns the first answer.
    pub async fn wait_checked(&self, msg_id: &str, limit: Duration) -> Check {
        self.wait_checks(msg_id, 1, limit).await.remove(0)
    }

    /// Waits until `msg_id` was checked and answered `n` times; returns the answers in order.
    pub async fn wait_checks(&self, msg_id: &str, n: usize, limit: Duration) -> Vec<Check> {
        self.wait(limit, &format!("{n} checks of {msg_id}"), |l| {
            l.checks_of(msg_id).len() >= n
        })
        .await;
        self.checks_of(msg_id)
    }

    /// Waits until a check of `msg_id` began (a gated one is waiting then).
    pub async fn wait_started(&self, msg_id: &str, limit: Duration) {
        self.wait(limit, &format!("a check of {msg_id} begins"), |l| {
            lock(&l.started).iter().any(|id| id == msg_id)
        })
        .await;
    }
}

/// The tests' [`TransactionListener`]: `execute` follows the [`Local`] argument, `check` follows
/// [`decide`] (a [`GATED`] body waits for the gate, then commits) and is recorded in the log.
#[derive(Debug, Clone)]
pub struct TxListener(pub Arc<TxLog>);

#[async_trait]
impl TransactionListener<Local> for TxListener {
    async fn execute(&self, _msg: &Message, local: Local) -> TransactionState {
        match local {
            Local::Commit => TransactionState::Commit,
            Local::Rollback => TransactionState::Rollback,
            Local::Unknown => TransactionState::Unknown,
            Local::Panic => panic!("the local transaction failed (test)"),
            Local::Hang => std::future::pending().await,
        }
    }

    async fn check(&self, msg: &MessageExt) -> TransactionState {
        let at = Instant::now();
        lock(&self.0.started).push(msg.msg_id.clone());
        self.0.bump();
        let state = if msg.body.starts_with(GATED.as_bytes()) {
            self.0.gate.notified().await;
            TransactionState::Commit
        } else {
            decide(&msg.body)
        };
        lock(&self.0.checks).push(Check {
            msg_id: msg.msg_id.clone(),
            body: String::from_utf8_lossy(&msg.body).into_owned(),
            topic: msg.topic.clone(),
            state,
            at,
        });
        self.0.bump();
        state
    }
}

/// A client configuration of its own (own instance name, so its own client instance and
/// connections) for the name server at `namesrv`.
pub fn own_client(namesrv: &str, tag: &str) -> ClientConfig {
    ClientConfig::builder()
        .namesrv_addr(namesrv)
        .instance_name(rmq_testkit::unique_name(tag))
        .build()
        .unwrap_or_else(|e| panic!("client config: {e}"))
}

/// Starts a transactional producer of `group` in a client instance of its own, heartbeating to
/// the brokers of `topics` from the start, with the tests' listener on `log`.
pub async fn tx_producer(
    namesrv: &str,
    group: &str,
    topics: &[&str],
    log: &Arc<TxLog>,
    execute_timeout: Duration,
) -> TransactionProducer<Local> {
    Producer::builder()
        .group(group)
        .client_config(own_client(namesrv, "it_tx"))
        .transaction_listener(TxListener(Arc::clone(log)))
        .topics(topics.iter().copied())
        .execute_timeout(execute_timeout)
        .start()
        .await
        .unwrap_or_else(|e| panic!("transactional producer {group} starts: {e}"))
}

/// A push consumer of a fresh group (`<prefix>_cg_...`) on all of `topic` that records every
/// delivery.
pub async fn recording_consumer(
    env: &Env,
    prefix: &str,
    topic: &str,
) -> (Arc<crate::Recorder>, rmq_consumer_push::PushConsumer) {
    let rec = Arc::new(crate::Recorder::new());
    let group = rmq_testkit::unique_name(&format!("{prefix}_cg"));
    let consumer = crate::consumer::start(
        crate::consumer::ConsumerSpec::new(env.namesrv(), &group, topic),
        crate::consumer::recording(rec.clone(), 0, |_, _| false),
    )
    .await;
    (rec, consumer)
}

/// The client ids of the producers of `group` the test broker lists (GET_PRODUCER_CONNECTION_LIST);
/// empty when it knows none.
pub async fn producer_clients(env: &Env, group: &str) -> Vec<(String, String)> {
    match env
        .admin
        .get_producer_connection_list(&env.broker.broker_addr, group)
        .await
    {
        Ok(list) => list
            .connection_set
            .into_iter()
            .map(|c| (c.client_id, c.language))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Waits (bounded polling: the broker offers no event) until the test broker lists a producer of
/// `group` that `accept` picks (client id, language); returns its client id.
pub async fn wait_producer_listed(
    env: &Env,
    group: &str,
    limit: Duration,
    accept: impl Fn(&str, &str) -> bool,
) -> String {
    crate::poll_until(
        limit,
        Duration::from_millis(100),
        &format!("the broker lists a producer of {group}"),
        || {
            let accept = &accept;
            async move {
                let clients = producer_clients(env, group).await;
                match clients.iter().find(|(id, lang)| accept(id, lang)) {
                    Some((id, _)) => Ok(id.clone()),
                    None => Err(clients),
                }
            }
        },
    )
    .await
}

/// GET_BROKER_CONFIG (26) of the test broker: its effective settings.
pub async fn broker_config(env: &Env) -> HashMap<String, String> {
    let request = RemotingCommand::request(RequestCode(26), &EmptyHeader);
    let response = env
        .admin
        .remoting()
        .invoke_expect(
            &env.broker.broker_addr,
            request,
            Duration::from_secs(5),
            &[ResponseCode::SUCCESS],
        )
        .await
        .unwrap_or_else(|e| panic!("GET_BROKER_CONFIG: {e}"));
    String::from_utf8_lossy(&response.body)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// The broker's `transactionTimeOut` + `transactionCheckInterval`: by then a half message without
/// an answer has been checked at least once.
pub async fn first_check_within(env: &Env) -> Duration {
    let config = broker_config(env).await;
    let ms = |k: &str| -> u64 {
        config
            .get(k)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("the broker config has no {k}"))
    };
    Duration::from_millis(ms("transactionTimeOut") + ms("transactionCheckInterval"))
}
