//! Running the `rmq` binary against the test broker: commands with a
//! timeout and a clean environment, children for long-running commands,
//! and bounded waits.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Every `rmq` run is killed after this long (a hang is a failure).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// The name-server address of the test broker (started if needed).
pub fn namesrv() -> String {
    rmq_testkit::namesrv_addr()
}

/// An empty directory used as `XDG_CONFIG_HOME`, so no user config is read.
fn empty_config_home() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rmq-cli-test-config-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// The path of the built binary.
pub fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("rmq")
}

/// `rmq --namesrv <test broker> ARGS`, with a clean environment.
pub fn rmq(args: &[&str]) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::new(bin());
    cmd.env_remove("NAMESRV_ADDR")
        .env_remove("RMQ_PROFILE")
        .env_remove("RMQ_CONFIG")
        .env("XDG_CONFIG_HOME", empty_config_home())
        .arg("--namesrv")
        .arg(namesrv())
        .args(args)
        .timeout(RUN_TIMEOUT);
    cmd
}

/// What a finished run printed.
#[derive(Debug)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
}

fn output(cmd: &mut assert_cmd::Command) -> Output {
    let out = cmd.output().expect("rmq runs");
    Output {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `rmq ARGS`, asserting exit code 0.
pub fn ok(args: &[&str]) -> Output {
    ok_with(rmq(args))
}

/// Runs a prepared command, asserting exit code 0.
pub fn ok_with(mut cmd: assert_cmd::Command) -> Output {
    let out = output(&mut cmd);
    assert_eq!(out.code, Some(0), "rmq failed: {out:#?}");
    out
}

/// Runs `rmq ARGS`, asserting a failure with exit code `code`.
pub fn fails(args: &[&str], code: i32) -> Output {
    let out = output(&mut rmq(args));
    assert_eq!(out.code, Some(code), "unexpected exit: {out:#?}");
    out
}

/// A fresh topic with `queues` queues, created by `rmq topic create`.
pub fn topic(prefix: &str, queues: u32) -> String {
    let name = rmq_testkit::unique_name(prefix);
    let q = queues.to_string();
    ok(&[
        "topic",
        "create",
        &name,
        "--queues",
        &q,
        "--broker",
        &broker().broker_name,
    ]);
    name
}

pub fn broker() -> &'static rmq_testkit::Broker {
    rmq_testkit::ensure_broker()
}

/// Parses each stdout line as JSON.
pub fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    out.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

/// A long-running `rmq` (consume, tail, lag --watch) whose stdout lines
/// arrive on a channel; killed on drop.
pub struct Running {
    pub child: Child,
    lines: mpsc::Receiver<String>,
    stderr: mpsc::Receiver<String>,
}

impl Running {
    pub fn start(args: &[&str]) -> Running {
        let mut child = Command::new(bin())
            .env_remove("NAMESRV_ADDR")
            .env("XDG_CONFIG_HOME", empty_config_home())
            .arg("--namesrv")
            .arg(namesrv())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("rmq starts");
        let lines = pipe_lines(child.stdout.take().expect("stdout piped"));
        let stderr = pipe_lines(child.stderr.take().expect("stderr piped"));
        Running {
            child,
            lines,
            stderr,
        }
    }

    /// The next stdout line, failing the test after `secs`.
    pub fn line(&self, secs: u64) -> String {
        match self.lines.recv_timeout(Duration::from_secs(secs)) {
            Ok(l) => l,
            Err(e) => panic!(
                "no output line within {secs} s ({e}); stderr: {}",
                self.stderr_so_far()
            ),
        }
    }

    /// The next stderr line containing `needle`, failing after `secs`.
    pub fn stderr_line(&self, needle: &str, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(l) if l.contains(needle) => return l,
                Ok(_) => {}
                Err(e) => panic!("no stderr line with {needle:?} within {secs} s ({e})"),
            }
        }
    }

    fn stderr_so_far(&self) -> String {
        self.stderr.try_iter().collect::<Vec<_>>().join("\n")
    }

    /// Sends SIGINT (Ctrl-C) and waits for the exit; returns its code and
    /// the rest of stderr, read to its end (the reader thread may still be
    /// forwarding the last lines when the exit is seen).
    pub fn interrupt(mut self, secs: u64) -> (Option<i32>, String) {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -INT failed");
        let code = self.wait(secs);
        (code, self.stderr_to_end(secs))
    }

    /// Every stderr line not read yet, up to the end of the pipe (after the
    /// exit), failing after `secs`.
    fn stderr_to_end(&self, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        let mut lines = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(l) => lines.push(l),
                Err(mpsc::RecvTimeoutError::Disconnected) => return lines.join("\n"),
                Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                    "stderr not closed within {secs} s of the exit; so far: {}",
                    lines.join("\n")
                ),
            }
        }
    }

    /// Waits for the exit, failing after `secs`.
    pub fn wait(&mut self, secs: u64) -> Option<i32> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status.code();
            }
            assert!(
                Instant::now() < deadline,
                "rmq did not exit within {secs} s"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pipe_lines(pipe: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Polls `check` every 100 ms until true; only for state the broker offers
/// no event for (registrations).
pub fn poll_until(secs: u64, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not true after {secs} s");
        thread::sleep(Duration::from_millis(100));
    }
}

/// `group lag G --json` as a value (the command must succeed).
pub fn lag(group: &str, topic: &str) -> serde_json::Value {
    let out = ok(&["group", "lag", group, "--topic", topic, "--json"]);
    serde_json::from_str(out.stdout.trim()).expect("lag JSON")
}
