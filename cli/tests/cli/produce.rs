//! `rmq produce`: arguments, stdin, JSON lines, a file, generated load.

use crate::support::{json_lines, ok, ok_with, rmq, topic};

#[test]
fn arguments_print_one_line_per_message_and_a_summary() {
    let t = topic("cli_produce_args", 2);
    let out = ok(&[
        "produce", &t, "one", "two", "three", "--tags", "created", "--keys", "k1,k2",
    ]);
    let lines = out.lines();
    assert_eq!(lines.len(), 3, "{out:#?}");
    for (i, line) in lines.iter().enumerate() {
        let parts: Vec<&str> = line.split(' ').collect();
        assert_eq!(parts.len(), 3, "{line}");
        assert_eq!(parts[0].len(), 32, "msg id in {line}");
        assert!(parts[1].starts_with(&format!("{t}@")), "{line}");
        assert!(parts[2].parse::<i64>().is_ok(), "offset in {line} (#{i})");
    }
    assert!(
        out.stderr.contains("sent 3 messages (0 failed)"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("latency: p50 "), "{}", out.stderr);

    let got = ok(&[
        "consume",
        &t,
        "--group",
        &rmq_testkit::unique_name("g_args"),
        "--from",
        "first",
        "--count",
        "3",
        "--json",
    ]);
    let msgs = json_lines(&got);
    let mut bodies: Vec<&str> = msgs.iter().map(|m| m["body"].as_str().unwrap()).collect();
    bodies.sort_unstable();
    assert_eq!(bodies, ["one", "three", "two"]);
    assert!(
        msgs.iter()
            .all(|m| m["tags"] == "created" && m["keys"] == serde_json::json!(["k1", "k2"]))
    );
}

#[test]
fn stdin_json_lines_and_files() {
    let t = topic("cli_produce_json", 1);
    let input = concat!(
        r#"{"body": "paid", "tags": "paid", "keys": ["order-1"], "properties": {"region": "eu"}}"#,
        "\n\n",
        r#"{"body": "shipped", "keys": "order-1"}"#,
        "\n"
    );
    let mut cmd = rmq(&["produce", &t, "--json", "--tags", "default"]);
    cmd.write_stdin(input);
    assert_eq!(ok_with(cmd).lines().len(), 2);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lines.txt");
    std::fs::write(&file, "from file 1\r\nfrom file 2\n").unwrap();
    let out = ok(&[
        "produce",
        &t,
        "--file",
        file.to_str().unwrap(),
        "-p",
        "src=file",
    ]);
    assert_eq!(out.lines().len(), 2);

    let got = json_lines(&ok(&[
        "consume",
        &t,
        "--group",
        &rmq_testkit::unique_name("g_json"),
        "--from",
        "first",
        "--count",
        "4",
        "--json",
    ]));
    let by_body = |b: &str| {
        got.iter()
            .find(|m| m["body"] == b)
            .unwrap_or_else(|| panic!("{b} missing: {got:?}"))
    };
    assert_eq!(by_body("paid")["tags"], "paid");
    assert_eq!(by_body("paid")["properties"]["region"], "eu");
    assert_eq!(by_body("shipped")["tags"], "default");
    assert_eq!(by_body("shipped")["keys"], serde_json::json!(["order-1"]));
    assert_eq!(by_body("from file 1")["properties"]["src"], "file");

    // A bad line stops with its line number and exit code 2.
    let mut bad = rmq(&["produce", &t, "--json"]);
    bad.write_stdin("{\"body\": \"ok\"}\n{\"nobody\": 1}\n");
    let out = bad.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2: not a JSON message"));
}

#[test]
fn generated_load_reports_plain_progress_when_not_a_terminal() {
    let t = topic("cli_produce_load", 2);
    // 1500 messages at 1000/s: about 1.5 s, so one plain status line.
    let out = ok(&[
        "produce", &t, "--size", "200", "--count", "1500", "--rate", "1000",
    ]);
    assert!(
        out.stdout.is_empty(),
        "no per-message lines under load: {}",
        out.stdout
    );
    assert!(
        out.stderr.contains("produce: "),
        "plain progress line: {}",
        out.stderr
    );
    assert!(out.stderr.contains("/1500 messages, "), "{}", out.stderr);
    assert!(
        out.stderr.contains("sent 1500 messages (0 failed)"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("p99 "), "{}", out.stderr);
    let secs: f64 = out
        .stderr
        .split(" in ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(secs >= 1.4, "--rate 1000 held 1500 messages for {secs} s");
    let described = ok(&["topic", "describe", &t, "--json"]);
    let v: serde_json::Value = serde_json::from_str(described.stdout.trim()).unwrap();
    assert_eq!(v["messages"], 1500);
}
