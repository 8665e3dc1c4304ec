//! `rmq msg get` and `rmq msg query`.

use std::time::Duration;

use crate::support::{broker, fails, json_lines, ok, poll_until, rmq, topic};

#[test]
fn get_by_either_id_and_query_by_key() {
    let t = topic("cli_msg", 1);
    let key = rmq_testkit::unique_name("order");
    let sent = ok(&["produce", &t, "the body", "--keys", &key, "--tags", "x"]);
    let msg_id = sent.stdout.split(' ').next().unwrap().to_owned();
    let consumed = json_lines(&ok(&[
        "tail", &t, "--from", "first", "--count", "1", "--json",
    ]));
    let offset_id = consumed[0]["offset_msg_id"].as_str().unwrap().to_owned();

    let by_offset = ok(&["msg", "get", &offset_id]);
    assert!(
        by_offset.stdout.contains(&msg_id) && by_offset.stdout.ends_with(": the body\n"),
        "{}",
        by_offset.stdout
    );
    // The index is written after dispatch: no event to await, so poll.
    poll_until(20, "the message is indexed", || {
        rmq(&["msg", "get", &msg_id, "--topic", &t, "--json"])
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap()
            .status
            .success()
    });
    let by_uniq = json_lines(&ok(&["msg", "get", &msg_id, "--topic", &t, "--json"]));
    assert_eq!(by_uniq[0]["body"], "the body");
    assert_eq!(
        by_uniq[0]["broker"],
        crate::support::broker().broker_name.as_str()
    );
    let found = json_lines(&ok(&[
        "msg", "query", "--topic", &t, "--key", &key, "--json",
    ]));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["msg_id"], msg_id.as_str());
    let none = ok(&[
        "msg",
        "query",
        "--topic",
        &t,
        "--key",
        "no-such-key",
        "--begin",
        "1h",
    ]);
    assert!(
        none.stdout.is_empty() && none.stderr.contains("no message"),
        "{none:?}"
    );
    let usage = fails(&["msg", "get", &msg_id], 2);
    assert!(usage.stderr.contains("--topic"), "{}", usage.stderr);
}

#[test]
fn recall_a_timer_message_and_send_priority_and_lite_messages() {
    let t = topic("cli_recall", 1);
    if broker().major_version() == Some(4) {
        // 4.9.x has none of these: typed refusals, exit code 1.
        for args in [
            vec!["produce", &t, "x", "--priority", "3"],
            vec!["produce", &t, "x", "--lite-topic", "order-1"],
        ] {
            let out = fails(&args, 1);
            assert!(out.stderr.contains("needs RocketMQ V5_"), "{}", out.stderr);
        }
        let handle = rmq::protocol::message::RecallHandle {
            topic: t.clone(),
            broker_name: broker().broker_name.clone(),
            timestamp: "4102444800000".into(),
            message_id: "7F00000100002A9F0000000000000010".into(),
        }
        .encode();
        let out = fails(&["msg", "recall", "--topic", &t, &handle], 1);
        assert!(
            out.stderr.contains("needs RocketMQ V5_3_2"),
            "{}",
            out.stderr
        );
        return;
    }
    let sent = ok(&["produce", &t, "later", "-p", "TIMER_DELAY_SEC=600"]);
    let line = sent.lines()[0].to_owned();
    let parts: Vec<&str> = line.split(' ').collect();
    assert_eq!(parts.len(), 4, "{line}");
    let handle = parts[3]
        .strip_prefix("recall=")
        .unwrap_or_else(|| panic!("a recall handle in {line}"));
    let recalled = ok(&["msg", "recall", "--topic", &t, handle]);
    assert_eq!(recalled.stdout, format!("recalled {}\n", parts[0]));
    let bad = fails(&["msg", "recall", "--topic", &t, "not-a-handle"], 1);
    assert!(bad.stderr.contains("recall handle"), "{}", bad.stderr);

    // Priority and lite-topic messages (the topic's own type is not checked over remoting).
    let prio = ok(&["produce", &t, "urgent", "--priority", "0"]);
    assert_eq!(prio.lines().len(), 1, "{prio:#?}");
    let lite = ok(&["produce", &t, "lite", "--lite-topic", "order-1"]);
    assert_eq!(lite.lines().len(), 1, "{lite:#?}");
    let negative = fails(&["produce", &t, "x", "--priority", "-1"], 1);
    assert!(negative.stderr.contains("priority"), "{}", negative.stderr);
}
