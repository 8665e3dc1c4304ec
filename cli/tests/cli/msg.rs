//! `rmq msg get` and `rmq msg query`.

use std::time::Duration;

use crate::support::{fails, json_lines, ok, poll_until, rmq, topic};

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
