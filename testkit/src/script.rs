//! Running `scripts/rocketmq-local.sh` with a timeout and reading its `export K=V` lines.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Path of `scripts/rocketmq-local.sh` in this repository.
pub fn script_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("scripts")
        .join("rocketmq-local.sh")
}

/// What one run of the script produced.
#[derive(Debug)]
pub(crate) struct ScriptOutput {
    pub(crate) status: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl ScriptOutput {
    pub(crate) fn success(&self) -> bool {
        self.status == Some(0)
    }

    /// The `export KEY=VALUE` lines of stdout.
    pub(crate) fn exports(&self) -> BTreeMap<String, String> {
        parse_exports(&self.stdout)
    }

    /// A description for panic messages.
    pub(crate) fn describe(&self, what: &str) -> String {
        let status = match self.status {
            Some(code) => format!("exit code {code}"),
            None => "killed (signal or timeout)".to_owned(),
        };
        format!(
            "{what}: `bash {} ...` failed with {status}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            script_path().display(),
            self.stdout.trim_end(),
            self.stderr.trim_end()
        )
    }
}

pub(crate) fn parse_exports(stdout: &str) -> BTreeMap<String, String> {
    stdout
        .lines()
        .filter_map(|line| line.trim().strip_prefix("export "))
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// Runs `bash scripts/rocketmq-local.sh <args>`, killing it after `timeout`.
///
/// Returns an error string when the script cannot be spawned at all.
pub(crate) fn run(args: &[&str], timeout: Duration) -> Result<ScriptOutput, String> {
    run_with_env(args, &[], timeout)
}

/// Like [`run`], with extra environment variables for the script.
pub(crate) fn run_with_env(
    args: &[&str],
    envs: &[(&str, String)],
    timeout: Duration,
) -> Result<ScriptOutput, String> {
    let script = script_path();
    let mut child = Command::new("bash")
        .arg(&script)
        .args(args)
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!(
                "cannot run `bash {}`: {e} (is bash installed?)",
                script.display()
            )
        })?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait_with_deadline(&mut child, timeout);
    let stdout = stdout.join().unwrap_or_default();
    let mut stderr = stderr.join().unwrap_or_default();
    if status.is_none() {
        stderr.push_str(&format!(
            "\n(testkit: killed the script after {} s)",
            timeout.as_secs()
        ));
    }
    Ok(ScriptOutput {
        status,
        stdout,
        stderr,
    })
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut pipe) = pipe {
            // A read error only truncates the captured text.
            let _ = pipe.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Waits for the child; `None` when it had to be killed (timeout) or ended by a signal.
fn wait_with_deadline(child: &mut Child, timeout: Duration) -> Option<i32> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.code(),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(50)),
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_export_lines_only() {
        let out = "rocketmq-local: noise\nexport NAMESRV_ADDR=127.0.0.1:9876\n  export RMQ_VERSION=5.5.0 \nexport BAD\n";
        let map = parse_exports(out);
        assert_eq!(map.len(), 2);
        assert_eq!(
            map.get("NAMESRV_ADDR").map(String::as_str),
            Some("127.0.0.1:9876")
        );
        assert_eq!(map.get("RMQ_VERSION").map(String::as_str), Some("5.5.0"));
    }

    #[test]
    fn script_exists() {
        assert!(script_path().is_file(), "{}", script_path().display());
    }

    #[test]
    fn timeout_kills_the_child() {
        let mut child = Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let started = Instant::now();
        assert_eq!(
            wait_with_deadline(&mut child, Duration::from_millis(200)),
            None
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
