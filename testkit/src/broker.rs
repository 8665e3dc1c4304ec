//! The real RocketMQ the end-to-end tests talk to: the one at `NAMESRV_ADDR`, or a local one started
//! once per test process with `scripts/rocketmq-local.sh start`.
//!
//! Tests never skip: when no broker can be reached or started, every caller panics with the reason.

use std::sync::OnceLock;
use std::time::Duration;

use crate::script::{self, ScriptOutput};
use crate::wire;

/// Name of the first (always running) broker of the local cluster.
pub const BROKER_A: &str = "broker-a";
/// Name of the optional second broker of the local cluster (see [`second_broker`]).
pub const BROKER_B: &str = "broker-b";
/// Cluster name of the local brokers.
pub const CLUSTER: &str = "DefaultCluster";

/// Maven download (first run only) plus name server and broker start.
const START_TIMEOUT: Duration = Duration::from_secs(900);
/// Stopping or (re)starting one broker, incl. a slow graceful shutdown and abnormal recovery.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(400);
/// Reading the script's state.
const QUERY_TIMEOUT: Duration = Duration::from_secs(60);

/// A running RocketMQ name server with (at least) one master broker registered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Broker {
    /// Name server address, `host:port` (what clients are configured with).
    pub namesrv_addr: String,
    /// Address of the master broker the tests use by default, `host:port`.
    pub broker_addr: String,
    /// Name of that broker (`broker-a` locally).
    pub broker_name: String,
    /// Its cluster (`DefaultCluster` locally).
    pub cluster: String,
    /// Broker version, e.g. `5.5.0` or `4.9.7` (`unknown` if the broker did not say).
    pub version: String,
    /// Managed by `scripts/rocketmq-local.sh`: [`kill_broker`], [`restart_broker`] and
    /// [`second_broker`] work only then.
    pub local: bool,
}

impl Broker {
    /// The major version (4 or 5), if known.
    pub fn major_version(&self) -> Option<u32> {
        self.version.split('.').next()?.parse().ok()
    }

    /// Whether the broker is at least `major.minor` (false when the version is unknown).
    pub fn version_at_least(&self, major: u32, minor: u32) -> bool {
        let mut parts = self.version.split('.').map(|p| p.parse::<u32>().ok());
        match (parts.next().flatten(), parts.next().flatten()) {
            (Some(ma), Some(mi)) => (ma, mi) >= (major, minor),
            _ => false,
        }
    }
}

static BROKER: OnceLock<Result<Broker, String>> = OnceLock::new();

/// The test broker, blocking: uses `NAMESRV_ADDR` when set, otherwise starts the local RocketMQ
/// (`scripts/rocketmq-local.sh start`) once per process and reuses it.
///
/// A broker started here keeps running after the tests (the next run reuses it); stop it with
/// `scripts/rocketmq-local.sh stop`. `scripts/test.sh` starts and stops it around `cargo test`.
///
/// # Panics
///
/// When `NAMESRV_ADDR` does not answer or the local start fails; every later call panics the same
/// way (the start is not retried).
pub fn ensure_broker() -> &'static Broker {
    match BROKER.get_or_init(init) {
        Ok(broker) => broker,
        Err(msg) => panic!("rmq-testkit: no RocketMQ for the tests: {msg}"),
    }
}

/// The test name server address (`host:port`): `ensure_broker().namesrv_addr`, blocking.
///
/// # Panics
///
/// As [`ensure_broker`].
pub fn namesrv_addr() -> String {
    ensure_broker().namesrv_addr.clone()
}

/// The test broker; like [`ensure_broker`] but does the (slow, blocking) first start on tokio's
/// blocking pool.
///
/// # Panics
///
/// As [`ensure_broker`].
pub async fn broker() -> &'static Broker {
    if BROKER.get().is_some() {
        return ensure_broker();
    }
    blocking(ensure_broker).await
}

fn init() -> Result<Broker, String> {
    match std::env::var("NAMESRV_ADDR") {
        Ok(addr) if !addr.trim().is_empty() => from_namesrv(addr.trim()),
        _ => start_local(),
    }
}

fn start_local() -> Result<Broker, String> {
    let out = script::run(&["start"], START_TIMEOUT)?;
    if !out.success() {
        return Err(out.describe("starting the local RocketMQ"));
    }
    let env = out.exports();
    let get = |key: &str| {
        env.get(key)
            .cloned()
            .ok_or_else(|| out.describe(&format!("`start` printed no `export {key}=` line")))
    };
    Ok(Broker {
        namesrv_addr: get("NAMESRV_ADDR")?,
        broker_addr: get("RMQ_BROKER_ADDR")?,
        broker_name: BROKER_A.to_owned(),
        cluster: CLUSTER.to_owned(),
        version: get("RMQ_VERSION")?,
        local: true,
    })
}

/// Describes the cluster behind an externally given name server.
fn from_namesrv(namesrv: &str) -> Result<Broker, String> {
    let brokers = wire::registered_brokers(namesrv).map_err(|e| {
        format!(
            "NAMESRV_ADDR={namesrv} is set but does not answer ({e}); unset it to let the testkit \
             start a local RocketMQ, or start one with `scripts/rocketmq-local.sh start`"
        )
    })?;
    let wanted = std::env::var("RMQ_BROKER_ADDR").ok();
    let master = brokers
        .iter()
        .filter(|b| b.id == 0)
        .find(|b| wanted.as_deref().is_none_or(|w| w == b.addr))
        .ok_or_else(|| match &wanted {
            Some(w) => format!(
                "RMQ_BROKER_ADDR={w} is not a master registered with NAMESRV_ADDR={namesrv} \
                 (registered: {brokers:?})"
            ),
            None => format!("no master broker is registered with NAMESRV_ADDR={namesrv}"),
        })?;
    let version = wire::broker_version(&master.addr)
        .ok()
        .or_else(|| std::env::var("RMQ_VERSION").ok())
        .unwrap_or_else(|| "unknown".to_owned());
    Ok(Broker {
        namesrv_addr: namesrv.to_owned(),
        broker_addr: master.addr.clone(),
        broker_name: master.name.clone(),
        cluster: master.cluster.clone(),
        version,
        local: script_namesrv().as_deref() == Some(namesrv),
    })
}

/// `NAMESRV_ADDR` of the instance `scripts/rocketmq-local.sh` runs, if any.
fn script_namesrv() -> Option<String> {
    let out = script::run(&["env"], QUERY_TIMEOUT).ok()?;
    if !out.success() {
        return None;
    }
    out.exports().get("NAMESRV_ADDR").cloned()
}

/// Starts the second broker (`broker-b`, own port and store) if it is not running and waits until
/// it is registered; returns its address. Tests that need two brokers (failover, rebalancing
/// across brokers) call this first.
///
/// # Panics
///
/// When the test broker is not the local one (see [`Broker::local`]) or the start fails.
pub async fn second_broker() -> String {
    start_broker(BROKER_B).await
}

/// Starts a stopped or killed local broker (`broker-a` / `broker-b`), keeping its store, and waits
/// until it is registered with the name server again; returns its address. No-op when running.
///
/// # Panics
///
/// When the test broker is not local or the start fails.
pub async fn start_broker(name: &str) -> String {
    let out = control("start-broker", name).await;
    broker_addr_from(&out, name)
}

/// Stops a local broker gracefully (SIGTERM; a 5.x broker needs ~15 s) and waits for its exit.
///
/// # Panics
///
/// When the test broker is not local or the script fails.
pub async fn stop_broker(name: &str) {
    control("stop-broker", name).await;
}

/// Kills a local broker abruptly (SIGKILL) and waits for its exit; its store stays for
/// [`start_broker`], which then does RocketMQ's abnormal recovery.
///
/// # Panics
///
/// When the test broker is not local or the script fails.
pub async fn kill_broker(name: &str) {
    control("kill-broker", name).await;
}

/// Stops a local broker gracefully (if running) and starts it again on the same store; returns
/// its address once it is registered again.
///
/// # Panics
///
/// When the test broker is not local or the script fails.
pub async fn restart_broker(name: &str) -> String {
    let out = control("restart-broker", name).await;
    broker_addr_from(&out, name)
}

async fn control(action: &'static str, name: &str) -> ScriptOutput {
    let broker = broker().await;
    assert!(
        broker.local,
        "rmq-testkit: {action} {name}: the test broker at NAMESRV_ADDR={} is not managed by \
         scripts/rocketmq-local.sh, so it cannot be controlled",
        broker.namesrv_addr
    );
    let name = name.to_owned();
    blocking(move || {
        let out = script::run(&[action, &name], CONTROL_TIMEOUT)
            .unwrap_or_else(|e| panic!("rmq-testkit: {action} {name}: {e}"));
        assert!(
            out.success(),
            "rmq-testkit: {}",
            out.describe(&format!("{action} {name}"))
        );
        out
    })
    .await
}

fn broker_addr_from(out: &ScriptOutput, name: &str) -> String {
    let key = if name == BROKER_B {
        "RMQ_BROKER_B_ADDR"
    } else {
        "RMQ_BROKER_ADDR"
    };
    out.exports().get(key).cloned().unwrap_or_else(|| {
        panic!(
            "rmq-testkit: {}",
            out.describe(&format!("no `export {key}=` line"))
        )
    })
}

/// Runs blocking work on tokio's blocking pool, re-raising its panic in the caller.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(value) => value,
        Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
        Err(err) => panic!("rmq-testkit: blocking task failed: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_version(version: &str) -> Broker {
        Broker {
            namesrv_addr: "127.0.0.1:9876".into(),
            broker_addr: "127.0.0.1:10911".into(),
            broker_name: BROKER_A.into(),
            cluster: CLUSTER.into(),
            version: version.into(),
            local: true,
        }
    }

    #[test]
    fn version_checks() {
        let b = with_version("5.5.0");
        assert_eq!(b.major_version(), Some(5));
        assert!(b.version_at_least(5, 0));
        assert!(b.version_at_least(4, 9));
        assert!(!b.version_at_least(5, 6));
        let old = with_version("4.9.7");
        assert_eq!(old.major_version(), Some(4));
        assert!(!old.version_at_least(5, 0));
        let unknown = with_version("unknown");
        assert_eq!(unknown.major_version(), None);
        assert!(!unknown.version_at_least(4, 0));
    }
}
