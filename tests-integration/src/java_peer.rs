//! The Java peers for interop tests: `bench/peers/java` (the official RocketMQ Java client of
//! the broker's version) and `bench/peers/java-grpc` (the official 5.x gRPC client), built with
//! Maven on first use into `.cache/java-peer/<version>-<hash>/` and
//! `.cache/java-grpc-peer/client-java-<hash>/` (git-ignored; `<hash>` covers the peer's sources,
//! so an edit rebuilds it and nothing else does), then run with `java`.
//!
//! Requirements: `mvn` (offline first, so a warm `~/.m2` needs no network) and `java` (or
//! `JAVA_HOME`), the ones `scripts/rocketmq-local.sh` needs anyway. A missing tool or a failed
//! build fails the test with what to do; nothing is skipped.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::Command;

/// The repository root.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The peer's sources: its `pom.xml` and every file under `src/`, in path order.
fn sources(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut out = vec![dir.join("pom.xml")];
    walk(&dir.join("src"), &mut out);
    out.sort();
    out
}

/// FNV-1a (64 bit) over the sources' relative paths and contents: a cache key that is stable
/// across toolchains.
fn source_hash(dir: &Path) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for path in sources(dir) {
        let rel = path.strip_prefix(dir).unwrap_or(&path).to_string_lossy();
        let content = fs::read(&path).unwrap_or_default();
        for b in rel.as_bytes().iter().chain(&[0]).chain(&content) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// The `java` to run: `$JAVA_HOME/bin/java` when present, else `java` on `PATH`.
pub fn java() -> PathBuf {
    std::env::var_os("JAVA_HOME")
        .map(|home| PathBuf::from(home).join("bin").join("java"))
        .filter(|j| j.exists())
        .unwrap_or_else(|| PathBuf::from("java"))
}

/// A cached build is usable when its `marker` class exists and every jar of its class path is
/// still there (the class path points into the local Maven repository).
fn usable(dir: &Path, marker: &str) -> Option<String> {
    if !dir.join("classes").join(marker).exists() {
        return None;
    }
    let cp = fs::read_to_string(dir.join("classpath.txt")).ok()?;
    let cp = cp.trim();
    if cp.split(':').any(|jar| !Path::new(jar).exists()) {
        return None;
    }
    Some(format!("{}:{cp}", dir.join("classes").display()))
}

/// The class path of the Java peer built against the version of the broker `env` tests
/// ([`classpath`]). Panics when that version is unknown.
pub async fn classpath_for(env: &rmq_testkit::env::Env) -> String {
    let version = &env.broker.version;
    assert!(
        !version.is_empty() && version != "unknown",
        "the broker's version is needed to build the Java peer against it (set RMQ_VERSION)"
    );
    classpath(version).await
}

/// The class path of the Java peer built against RocketMQ `version`, building it first when no
/// cached build of the current sources exists. Panics, saying what to do, when it cannot.
pub async fn classpath(version: &str) -> String {
    build(&Peer {
        dir: "bench/peers/java",
        cache: "java-peer",
        key: version,
        marker: "rmqbench/TxPeer.class",
        what: format!("rocketmq-client {version}"),
        args: vec![
            format!("-Drocketmq.version={version}"),
            "-Dno.example=true".to_owned(),
        ],
    })
    .await
}

/// The class path of the Java gRPC peer (`bench/peers/java-grpc`, the official 5.x gRPC client
/// `rocketmq-client-java`), building it first as [`classpath`] does.
pub async fn grpc_classpath() -> String {
    build(&Peer {
        dir: "bench/peers/java-grpc",
        cache: "java-grpc-peer",
        key: "client-java",
        marker: "rmqgrpc/GrpcPeer.class",
        what: "rocketmq-client-java".to_owned(),
        args: Vec::new(),
    })
    .await
}

/// A Maven project of a Java peer.
struct Peer<'a> {
    /// Its directory, from the repository root.
    dir: &'a str,
    /// Its cache directory under `.cache/`.
    cache: &'a str,
    /// What the build depends on besides the sources (e.g. the RocketMQ version).
    key: &'a str,
    /// A class under `classes/` that a complete build has.
    marker: &'a str,
    /// The client it builds, for messages.
    what: String,
    /// Extra Maven arguments.
    args: Vec<String>,
}

/// Builds `peer` (offline first) unless a cached build of its current sources exists; returns
/// its class path.
async fn build(peer: &Peer<'_>) -> String {
    let root = repo_root();
    let src = root.join(peer.dir);
    let cache = root.join(".cache").join(peer.cache);
    let key = peer.key;
    let dir = cache.join(format!("{key}-{}", source_hash(&src)));
    if let Some(cp) = usable(&dir, peer.marker) {
        return cp;
    }
    fs::create_dir_all(&cache).unwrap_or_else(|e| panic!("create {}: {e}", cache.display()));
    let tmp = cache.join(format!(".build-{key}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let log = cache.join(format!("build-{key}.log"));
    let started = std::time::Instant::now();
    let mut built = false;
    for offline in [true, false] {
        let log_file = fs::File::create(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        let mut cmd = Command::new("mvn");
        cmd.current_dir(&src).arg("-B").arg("-q");
        if offline {
            cmd.arg("-o");
        }
        cmd.args(&peer.args)
            .arg(format!("-Dpeer.build.directory={}", tmp.display()))
            .arg("compile")
            .arg("dependency:build-classpath")
            .arg("-Dmdep.includeScope=runtime")
            .arg(format!(
                "-Dmdep.outputFile={}",
                tmp.join("classpath.txt").display()
            ))
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log file"))
            .stderr(log_file)
            .kill_on_drop(true);
        let status = cmd.status().await.unwrap_or_else(|e| {
            panic!("cannot run mvn ({e}): install Maven (e.g. apt-get install maven); it builds the Java peer of the interop test")
        });
        if status.success() {
            built = true;
            break;
        }
    }
    if !built {
        let text = fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(15).collect();
        panic!(
            "the Maven build of {} ({}) failed; log {}:\n{}",
            peer.dir,
            peer.what,
            log.display(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    // Another build may have finished first: either copy is good.
    if fs::rename(&tmp, &dir).is_err() {
        let _ = fs::remove_dir_all(&tmp);
    }
    println!(
        "built the Java peer {} in {:?} ({})",
        peer.what,
        started.elapsed(),
        dir.display()
    );
    usable(&dir, peer.marker)
        .unwrap_or_else(|| panic!("the Java peer build in {} is incomplete", dir.display()))
}

/// A running Java peer: its stdout lines as they come; killed when dropped.
#[derive(Debug)]
pub struct JavaProcess {
    child: tokio::process::Child,
    lines: tokio::sync::watch::Receiver<Vec<String>>,
}

impl JavaProcess {
    /// Starts `java -cp CLASSPATH MAIN ARGS` with stdin piped (closing it ends the peer), its
    /// `user.home` (client logs) in `home`, stderr inherited.
    pub fn spawn(classpath: &str, main: &str, args: &[&str], home: &Path) -> JavaProcess {
        use tokio::io::AsyncBufReadExt;

        let mut child = Command::new(java())
            .arg(format!("-Duser.home={}", home.display()))
            .arg("-Xmx256m")
            .arg("-cp")
            .arg(classpath)
            .arg(main)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run java ({e}): install a JDK or set JAVA_HOME"));
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = tokio::sync::watch::channel(Vec::new());
        tokio::spawn(async move {
            let mut reader = tokio::io::BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                println!("java: {line}");
                tx.send_modify(|l| l.push(line));
            }
        });
        JavaProcess { child, lines }
    }

    /// Every line so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.borrow().clone()
    }

    /// Waits until the lines so far satisfy `done`; panics with `what` and the lines after
    /// `limit`, or when the peer exits first.
    pub async fn wait_for(
        &mut self,
        limit: std::time::Duration,
        what: &str,
        mut done: impl FnMut(&[String]) -> bool,
    ) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            self.lines.mark_unchanged();
            if done(&self.lines.borrow()) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "the Java peer exited ({status}) before: {what}; output {:?}",
                    self.lines()
                );
            }
            // Wake on a new line, and every 500 ms to notice an exit.
            let next =
                (tokio::time::Instant::now() + std::time::Duration::from_millis(500)).min(deadline);
            let _ = tokio::time::timeout_at(next, self.lines.changed()).await;
            if tokio::time::Instant::now() >= deadline && !done(&self.lines.borrow()) {
                panic!(
                    "{what}: not within {limit:?}; Java peer output {:?}",
                    self.lines()
                );
            }
        }
    }

    /// Writes `line` and a newline to the peer's stdin.
    ///
    /// # Panics
    ///
    /// When the peer's stdin is closed.
    pub async fn send_line(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;

        let stdin = self.child.stdin.as_mut().expect("the peer's stdin is open");
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write to the peer's stdin");
        stdin.flush().await.expect("flush the peer's stdin");
    }

    /// Closes the peer's stdin and waits (bounded) for it to exit; kills it after `limit`.
    pub async fn finish(mut self, limit: std::time::Duration) {
        drop(self.child.stdin.take());
        if tokio::time::timeout(limit, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}
