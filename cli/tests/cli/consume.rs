//! `rmq consume` and `rmq tail`: counts, filters, Ctrl-C, nothing committed
//! by tail.

use crate::support::{Running, fails, json_lines, lag, ok, topic};

#[test]
fn ctrl_c_stops_cleanly_after_committing() {
    let t = topic("cli_consume_ctrlc", 2);
    ok(&["produce", &t, "a", "b", "c", "d"]);
    let group = rmq_testkit::unique_name("g_ctrlc");
    let running = Running::start(&["consume", &t, "--group", &group, "--from", "first"]);
    let mut seen: Vec<String> = (0..4).map(|_| running.line(30)).collect();
    seen.sort();
    assert!(
        seen.iter().all(|l| l.contains('#') && l.contains(": ")),
        "{seen:?}"
    );
    let (code, stderr) = running.interrupt(30);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("consumed 4 messages; offsets committed"),
        "{stderr}"
    );
    let v = lag(&group, &t);
    assert_eq!(v["total_lag"], 0, "{v}");
    assert_eq!(v["queues"].as_array().unwrap().len(), 2);
}

#[test]
fn tags_and_sql_filters() {
    let t = topic("cli_consume_filter", 1);
    for (tags, n) in [("a", "1"), ("b", "2"), ("a", "3")] {
        ok(&[
            "produce",
            &t,
            &format!("{tags}{n}"),
            "--tags",
            tags,
            "-p",
            &format!("n={n}"),
        ]);
    }
    let tagged = json_lines(&ok(&[
        "consume",
        &t,
        "--group",
        &rmq_testkit::unique_name("g_tag"),
        "--from",
        "first",
        "--tags",
        "a",
        "--count",
        "2",
        "--json",
    ]));
    let bodies: Vec<&str> = tagged.iter().map(|m| m["body"].as_str().unwrap()).collect();
    assert_eq!(bodies, ["a1", "a3"]);
    let sql = json_lines(&ok(&[
        "tail", &t, "--from", "first", "--sql", "n > 1", "--count", "2", "--json",
    ]));
    let bodies: Vec<&str> = sql.iter().map(|m| m["body"].as_str().unwrap()).collect();
    assert_eq!(bodies, ["b2", "a3"]);
    // Human-readable lines name queue, offset, tags.
    let human = ok(&["tail", &t, "--from", "first", "--count", "1"]);
    assert!(
        human.stdout.contains("#0@0 ") && human.stdout.contains("tags=a: a1"),
        "{}",
        human.stdout
    );
    fails(
        &[
            "consume", &t, "--group", "g", "--tags", "a", "--sql", "n > 1",
        ],
        2,
    );
}

#[test]
fn tail_starts_at_the_end_and_commits_nothing() {
    let t = topic("cli_tail_end", 1);
    ok(&["produce", &t, "old-1", "old-2"]);
    let mut running = Running::start(&["tail", &t, "--count", "1", "--json"]);
    let started = running.stderr_line("as broadcasting group", 30);
    let group = started
        .split("broadcasting group ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_owned();
    // The tail may not have positioned itself yet: send until it prints one.
    let mut sent = 0;
    let line = loop {
        ok(&["produce", &t, &format!("new-{sent}"), "--quiet"]);
        sent += 1;
        if let Some(code) = running.child.try_wait().unwrap().and_then(|s| s.code()) {
            assert_eq!(code, 0);
            break running.line(5);
        }
        assert!(sent < 100, "tail printed nothing after {sent} new messages");
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let msg: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert!(
        msg["body"].as_str().unwrap().starts_with("new-"),
        "tail started at the end: {msg}"
    );
    assert_eq!(running.wait(10), Some(0));
    // Broadcasting offsets stay local: the brokers hold none for the tail's group.
    let out = fails(&["group", "lag", &group], 1);
    assert!(
        out.stderr.contains("has no committed offsets"),
        "{}",
        out.stderr
    );
}

#[test]
fn idle_timeout_ends_a_run_with_nothing_to_read() {
    let t = topic("cli_consume_idle", 1);
    let started = std::time::Instant::now();
    let out = ok(&["tail", &t, "--idle-timeout", "1s"]);
    assert!(out.stdout.is_empty());
    assert!(out.stderr.contains("tailed 0 messages"), "{}", out.stderr);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}
