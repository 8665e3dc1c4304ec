//! On a terminal (tmux), `rmq produce` draws an indicatif progress bar with
//! the rate and the ETA.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{bin, namesrv, topic};

fn tmux(socket: &str, args: &[&str]) -> std::process::Output {
    Command::new("tmux")
        .arg("-L")
        .arg(socket)
        .args(args)
        .output()
        .expect("tmux runs")
}

#[test]
fn produce_draws_a_progress_bar_on_a_terminal() {
    assert!(
        Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success()),
        "this test needs tmux (Debian: apt-get install tmux; .ci/run installs it)"
    );
    let t = topic("cli_tty", 2);
    let socket = rmq_testkit::unique_name("rmq_tty");
    let command = format!(
        "{} --namesrv {} produce {t} --size 100 --count 3000 --rate 1500; echo EXIT=$?; sleep 60",
        bin().display(),
        namesrv()
    );
    let started = tmux(
        &socket,
        &["new-session", "-d", "-x", "120", "-y", "20", &command],
    );
    assert!(started.status.success(), "{started:?}");
    let screen =
        || String::from_utf8_lossy(&tmux(&socket, &["capture-pane", "-p"]).stdout).into_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut saw_bar = None;
    let last = loop {
        let s = screen();
        if let Some(line) = s
            .lines()
            .find(|l| l.contains("produce [") && l.contains("/3,000") && l.contains("msg/s ETA"))
        {
            saw_bar = Some(line.to_owned());
        }
        if s.contains("EXIT=") {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "no end of run on the terminal: {s}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    tmux(&socket, &["kill-server"]);
    let bar = saw_bar.unwrap_or_else(|| panic!("no progress bar seen; last screen:\n{last}"));
    assert!(bar.contains('='), "{bar}");
    assert!(last.contains("sent 3000 messages (0 failed)"), "{last}");
    assert!(last.contains("EXIT=0"), "{last}");
    assert!(
        !last.contains("produce ["),
        "the bar is cleared at the end: {last}"
    );
}
