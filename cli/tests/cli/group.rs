//! `rmq group lag` and `rmq group reset`, cross-checked with mqadmin.

use crate::support::{Running, broker, fails, json_lines, lag, ok, poll_until, rmq, topic};

/// `mqadmin consumerProgress -g G`'s "Diff Total" (the same broker data).
fn mqadmin_diff_total(group: &str) -> i64 {
    let out = std::process::Command::new("bash")
        .arg(rmq_testkit::script_path())
        .args(["admin", "consumerProgress", "-g", group])
        .output()
        .expect("mqadmin runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("Diff Total:"))
        .unwrap_or_else(|| {
            panic!(
                "no Diff Total in mqadmin output: {text} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    line.rsplit(':')
        .next()
        .unwrap()
        .trim()
        .parse()
        .expect("a number")
}

#[test]
fn lag_table_json_and_mqadmin_agree() {
    let t = topic("cli_lag", 2);
    ok(&["produce", &t, "m1", "m2", "m3", "m4", "m5"]);
    let group = rmq_testkit::unique_name("g_lag");
    ok(&[
        "consume", &t, "--group", &group, "--from", "first", "--count", "2",
    ]);
    let v = lag(&group, &t);
    assert_eq!(v["total_lag"], 3, "{v}");
    let queues = v["queues"].as_array().unwrap();
    let sum = |k: &str| queues.iter().map(|q| q[k].as_i64().unwrap()).sum::<i64>();
    assert_eq!((sum("broker_offset"), sum("consumer_offset")), (5, 2));
    let table = ok(&["group", "lag", &group]);
    assert!(table.stdout.starts_with("TOPIC "), "{}", table.stdout);
    assert!(
        table
            .stdout
            .contains(&format!("group {group}: total lag 3 over ")),
        "{}",
        table.stdout
    );
    assert_eq!(mqadmin_diff_total(&group), 3);

    // --watch prints a refresh per interval until Ctrl-C.
    let watch = Running::start(&["group", "lag", &group, "--watch", "200ms"]);
    let mut refreshes = 0;
    while refreshes < 2 {
        if watch
            .line(20)
            .starts_with(&format!("group {group}: total lag 3"))
        {
            refreshes += 1;
        }
    }
    let (code, _) = watch.interrupt(20);
    assert_eq!(code, Some(0));
}

#[test]
fn reset_is_refused_while_consumers_are_live_then_moves_the_offsets() {
    let t = topic("cli_reset", 2);
    ok(&["produce", &t, "r1", "r2", "r3", "r4"]);
    let group = rmq_testkit::unique_name("g_reset");
    ok(&[
        "consume", &t, "--group", &group, "--from", "first", "--count", "4",
    ]);
    assert_eq!(lag(&group, &t)["total_lag"], 0);

    let live = Running::start(&["consume", &t, "--group", &group]);
    live.stderr_line("consuming", 30);
    // Registration reaches the broker with the consumer's heartbeat: poll.
    poll_until(30, "the live consumer is registered", || {
        !lag(&group, &t)["consumers"].as_array().unwrap().is_empty()
    });
    let refused = fails(&["group", "reset", &group, "--to", "first", "--yes"], 1);
    assert!(
        refused.stderr.contains("live consumers"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert_eq!(lag(&group, &t)["total_lag"], 0, "nothing was reset");
    let (code, _) = live.interrupt(30);
    assert_eq!(code, Some(0));

    // Not confirmed (stdin closed): nothing changes.
    let mut unconfirmed = rmq(&["group", "reset", &group, "--to", "first"]);
    unconfirmed.write_stdin("");
    let out = unconfirmed.output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--yes"));

    let mut confirmed = rmq(&["group", "reset", &group, "--to", "first"]);
    confirmed.write_stdin("y\n");
    let out = confirmed.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("CURRENT  NEW") && text.contains("reset group"),
        "{text}"
    );
    assert_eq!(lag(&group, &t)["total_lag"], 4);
    assert_eq!(mqadmin_diff_total(&group), 4);

    // To a time: the store time of one message puts the group right before it.
    let msgs = json_lines(&ok(&[
        "tail", &t, "--from", "first", "--count", "4", "--json",
    ]));
    let latest = msgs
        .iter()
        .max_by_key(|m| m["store_timestamp"].as_i64())
        .unwrap();
    let at = latest["store_timestamp"].as_i64().unwrap().to_string();
    ok(&[
        "group", "reset", &group, "--to", &at, "--topic", &t, "--yes",
    ]);
    let after = lag(&group, &t)["total_lag"].as_i64().unwrap();
    assert!((1..4).contains(&after), "lag after reset to {at}: {after}");
    ok(&["group", "reset", &group, "--to", "last", "--yes"]);
    assert_eq!(lag(&group, &t)["total_lag"], 0);
    let _ = broker();
}

#[test]
fn force_hands_a_live_group_reset_to_the_brokers() {
    let t = topic("cli_reset_force", 1);
    ok(&["produce", &t, "f1", "f2"]);
    let group = rmq_testkit::unique_name("g_force");
    ok(&[
        "consume", &t, "--group", &group, "--from", "first", "--count", "2",
    ]);
    let live = Running::start(&["consume", &t, "--group", &group]);
    live.stderr_line("consuming", 30);
    poll_until(30, "the live consumer is registered", || {
        !lag(&group, &t)["consumers"].as_array().unwrap().is_empty()
    });
    let out = ok(&[
        "group", "reset", &group, "--to", "first", "--yes", "--force",
    ]);
    assert!(
        out.stdout.contains("asked the brokers to reset"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains(&format!("{t} {}#0 -> 0", broker().broker_name)),
        "{}",
        out.stdout
    );
    // Whether the live consumer then rewinds is up to the consumer (5.x:
    // PULL_OFFSET_MOVED on its next pull; 4.9.x: RESET_CONSUMER_CLIENT_OFFSET);
    // this test covers what the command does: the brokers took the reset.
    let (code, _) = live.interrupt(30);
    assert_eq!(code, Some(0));
}
