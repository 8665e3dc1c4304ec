//! The RocketMQ an example talks to: `NAMESRV_ADDR`, or a local one started
//! (and stopped again) with `scripts/rocketmq-local.sh` (Java 8+ and Maven
//! needed). Shared by the examples with `#[path]`.

use std::future::Future;
use std::path::PathBuf;
use std::process::Command;

/// What the examples' `main` returns.
pub(crate) type Outcome = Result<(), Box<dyn std::error::Error>>;

/// Runs `example` with the name server address of [`LocalRocketMq::ensure`],
/// then stops the local RocketMQ if it was started here.
pub(crate) async fn run_example<F, Fut>(example: F) -> Outcome
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = Outcome>,
{
    let local = LocalRocketMq::ensure()?;
    let outcome = example(local.namesrv_addr.clone()).await;
    drop(local); // stops the local RocketMQ if this program started it
    outcome
}

/// The RocketMQ the example talks to: `NAMESRV_ADDR`, or one started here;
/// dropping it stops what it started.
pub(crate) struct LocalRocketMq {
    pub(crate) namesrv_addr: String,
    started_here: bool,
}

impl LocalRocketMq {
    fn script() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/rocketmq-local.sh")
    }

    pub(crate) fn ensure() -> Result<Self, Box<dyn std::error::Error>> {
        if let Ok(addr) = std::env::var("NAMESRV_ADDR") {
            if !addr.trim().is_empty() {
                return Ok(LocalRocketMq {
                    namesrv_addr: addr,
                    started_here: false,
                });
            }
        }
        println!(
            "NAMESRV_ADDR is unset: starting a local RocketMQ (scripts/rocketmq-local.sh start)..."
        );
        let already = Command::new("bash")
            .arg(Self::script())
            .arg("env")
            .output()?
            .status
            .success();
        let out = Command::new("bash")
            .arg(Self::script())
            .arg("start")
            .output()?;
        if !out.status.success() {
            return Err(format!(
                "could not start the local RocketMQ:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let addr = stdout
            .lines()
            .find_map(|l| l.strip_prefix("export NAMESRV_ADDR="))
            .ok_or("the start script printed no NAMESRV_ADDR")?
            .trim()
            .to_owned();
        Ok(LocalRocketMq {
            namesrv_addr: addr,
            started_here: !already,
        })
    }
}

impl Drop for LocalRocketMq {
    fn drop(&mut self) {
        if self.started_here {
            let _ = Command::new("bash")
                .arg(Self::script())
                .arg("stop")
                .status();
        }
    }
}
