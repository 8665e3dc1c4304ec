//! PULL_MESSAGE as the broker answers it: statuses, next / min / max
//! offsets, remarks, tag and SQL92 filters, refusals, the commit-offset bit,
//! LITE_PULL_MESSAGE, and long polling (held, woken by a matching message,
//! not by another).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rmq_protocol::header::{
    PullMessageRequestHeader, QueryConsumerOffsetRequestHeader, SendMessageRequestHeaderV2,
    pull_sys_flag,
};
use rmq_protocol::message::{decode_messages, encode_properties, property};
use rmq_protocol::{RemotingCommand, RequestCode};

use crate::obs;
use crate::support::{Obs, run};

fn send(topic: &str, queue_id: i32, i: usize, tag: &str) -> RemotingCommand {
    let mut props = HashMap::new();
    props.insert(property::TAGS.to_owned(), tag.to_owned());
    props.insert("n".to_owned(), i.to_string());
    props.insert(
        "color".to_owned(),
        if i % 3 == 0 { "red" } else { "blue" }.to_owned(),
    );
    props.insert(
        property::UNIQ_KEY.to_owned(),
        format!("7F000001000000000000000000{i:06}"),
    );
    let h = SendMessageRequestHeaderV2 {
        producer_group: "diff_pull_pg".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        flag: 0,
        properties: Some(encode_properties(&props)),
        ..Default::default()
    };
    RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, &h)
        .with_body(Bytes::from(format!("m{i}")))
}

#[derive(Clone)]
struct Pull<'a> {
    group: &'a str,
    topic: &'a str,
    queue_id: i32,
    offset: i64,
    max: i32,
    sys_flag: i32,
    expression: Option<(&'a str, &'a str)>,
    suspend_ms: i64,
    commit_offset: i64,
    code: RequestCode,
}

impl<'a> Pull<'a> {
    fn new(group: &'a str, topic: &'a str, queue_id: i32, offset: i64) -> Self {
        Pull {
            group,
            topic,
            queue_id,
            offset,
            max: 32,
            sys_flag: pull_sys_flag::SUBSCRIPTION,
            expression: Some(("TAG", "*")),
            suspend_ms: 0,
            commit_offset: 0,
            code: RequestCode::PULL_MESSAGE,
        }
    }

    fn filter(mut self, ty: &'a str, expr: &'a str) -> Self {
        self.expression = Some((ty, expr));
        self
    }

    fn cmd(&self) -> RemotingCommand {
        let h = PullMessageRequestHeader {
            consumer_group: self.group.into(),
            topic: self.topic.into(),
            queue_id: self.queue_id,
            queue_offset: self.offset,
            max_msg_nums: self.max,
            sys_flag: self.sys_flag,
            commit_offset: self.commit_offset,
            suspend_timeout_millis: self.suspend_ms,
            subscription: self.expression.map(|(_, e)| e.to_owned()),
            sub_version: 0,
            expression_type: self.expression.map(|(t, _)| t.to_owned()),
            max_msg_bytes: None,
            broker_name: None,
        };
        RemotingCommand::request(self.code, &h)
    }
}

fn describe(a: &RemotingCommand) -> String {
    let f = |k: &str| a.ext_field(k).unwrap_or("-").to_owned();
    let msgs = if a.code == 0 {
        decode_messages(&a.body)
            .map(|ms| {
                ms.iter()
                    .map(|m| format!("{}:{}", m.queue_offset, String::from_utf8_lossy(&m.body)))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_else(|e| format!("BAD BODY {e}"))
    } else {
        format!("{} body bytes", a.body.len())
    };
    format!(
        "code={} remark={:?} next={} min={} max={} suggest={} topicSysFlag={} groupSysFlag={} [{msgs}]",
        a.code,
        a.remark.as_deref().unwrap_or(""),
        f("nextBeginOffset"),
        f("minOffset"),
        f("maxOffset"),
        f("suggestWhichBrokerId"),
        f("topicSysFlag"),
        f("groupSysFlag"),
    )
}

/// A refusal: its code and the first words of its remark.
fn refusal(a: &RemotingCommand) -> String {
    let remark = a.remark.as_deref().unwrap_or("");
    let head: String = remark
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    format!("code={} remark~{head:?}", a.code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulls_answer_alike() {
    let topic = rmq_testkit::unique_name("diff_pull");
    let group = rmq_testkit::unique_name("diff_pull_cg");
    run("pull", |t| {
        let (topic, group) = (topic.clone(), group.clone());
        async move {
            let mut o = Obs::default();
            t.topic(&topic, 4).await;
            let p = |q, off| Pull::new(&group, &topic, q, off);
            obs!(o, "empty@0: {}", describe(&t.call(p(0, 0).cmd()).await));
            obs!(o, "empty@5: {}", describe(&t.call(p(0, 5).cmd()).await));
            for i in 0..10 {
                let tag = if i % 2 == 0 { "a" } else { "b" };
                let a = t.call(send(&topic, 0, i, tag)).await;
                assert_eq!(a.code, 0, "{:?}: send {i}: {:?}", t.side, a.remark);
            }
            t.wait_max_offset(&topic, 0, 10).await;
            for (name, pull) in [
                ("all", p(0, 0)),
                ("max 3", Pull { max: 3, ..p(0, 0) }),
                ("from 3", p(0, 3)),
                ("at max", p(0, 10)),
                ("past max", p(0, 15)),
                ("negative", p(0, -1)),
                ("tag a", p(0, 0).filter("TAG", "a")),
                ("tag a||b from 5", p(0, 5).filter("TAG", "a || b")),
                ("tag none", p(0, 0).filter("TAG", "zzz")),
                ("sql n > 5", p(0, 0).filter("SQL92", "n > 5")),
                (
                    "sql red and n < 5",
                    p(0, 0).filter("SQL92", "color = 'red' AND n < 5"),
                ),
                ("sql between", p(0, 0).filter("SQL92", "n BETWEEN 2 AND 4")),
                (
                    "sql is null",
                    p(0, 0).filter("SQL92", "missing IS NULL AND TAGS = 'b'"),
                ),
                ("sql in", p(0, 0).filter("SQL92", "n IN ('1', '7')")),
                ("sql none", p(0, 0).filter("SQL92", "n > 100")),
                // An expression that does not compile filters nothing.
                ("sql broken", p(0, 0).filter("SQL92", "n >")),
                ("sql empty", p(0, 0).filter("SQL92", "")),
                ("unknown type", p(0, 0).filter("FOO", "n > 1")),
            ] {
                obs!(o, "{name}: {}", describe(&t.call(pull.cmd()).await));
            }
            obs!(o, "queue 99: {}", refusal(&t.call(p(99, 0).cmd()).await));
            obs!(
                o,
                "no topic: {}",
                refusal(
                    &t.call(Pull::new(&group, "diff_no_such_topic_x", 0, 0).cmd())
                        .await
                )
            );
            let no_sub = Pull {
                sys_flag: 0,
                expression: None,
                ..p(0, 0)
            };
            obs!(
                o,
                "no subscription: {}",
                refusal(&t.call(no_sub.cmd()).await)
            );
            let lite = Pull {
                code: RequestCode::LITE_PULL_MESSAGE,
                max: 2,
                ..p(0, 0)
            };
            let a = t.call(lite.cmd()).await;
            obs!(o, "lite pull: code={}", a.code);

            // The commit-offset bit stores the group's offset.
            let commit = Pull {
                sys_flag: pull_sys_flag::SUBSCRIPTION | pull_sys_flag::COMMIT_OFFSET,
                commit_offset: 7,
                ..p(0, 10)
            };
            t.call(commit.cmd()).await;
            let q = QueryConsumerOffsetRequestHeader {
                consumer_group: group.clone(),
                topic: topic.clone(),
                queue_id: 0,
                set_zero_if_not_found: None,
                broker_name: None,
            };
            let a = t
                .call(RemotingCommand::request(
                    RequestCode::QUERY_CONSUMER_OFFSET,
                    &q,
                ))
                .await;
            obs!(
                o,
                "committed by pull: code={} offset={:?}",
                a.code,
                a.ext_field("offset")
            );

            // Long polling, three at once on their own queues.
            let held = Pull {
                sys_flag: pull_sys_flag::SUBSCRIPTION | pull_sys_flag::SUSPEND,
                suspend_ms: 500,
                ..p(3, 0)
            };
            let woken = Pull {
                sys_flag: pull_sys_flag::SUBSCRIPTION | pull_sys_flag::SUSPEND,
                suspend_ms: 20_000,
                ..p(2, 0)
            };
            let unmatched = Pull {
                sys_flag: pull_sys_flag::SUBSCRIPTION | pull_sys_flag::SUSPEND,
                suspend_ms: 1_500,
                ..p(1, 0).filter("TAG", "x")
            };
            let t0 = Instant::now();
            let (a_held, a_woken, a_unmatched) = tokio::join!(
                async {
                    let a = t.call(held.cmd()).await;
                    (a, t0.elapsed())
                },
                async {
                    let a = t.call(woken.cmd()).await;
                    (a, t0.elapsed())
                },
                async {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    let a = t.call(send(&topic, 2, 100, "y")).await;
                    assert_eq!(a.code, 0);
                    let a = t.call(send(&topic, 1, 101, "y")).await;
                    assert_eq!(a.code, 0);
                    // The pull for tag x is on queue 1 at offset 0: the first pass
                    // finds the queue empty only if it ran before the send.
                    let a = t.call(unmatched.cmd()).await;
                    (a, t0.elapsed())
                },
            );
            obs!(
                o,
                "held: {} at least 400 ms: {}",
                describe(&a_held.0),
                a_held.1 >= Duration::from_millis(400)
            );
            obs!(
                o,
                "woken: {} early: {}",
                describe(&a_woken.0),
                a_woken.1 < Duration::from_secs(5)
            );
            obs!(o, "unmatched: {}", describe(&a_unmatched.0));
            // A pull at the end for tag x, then a message of tag y: not woken by
            // it; after the hold, the message is skipped.
            let at_end = Pull {
                sys_flag: pull_sys_flag::SUBSCRIPTION | pull_sys_flag::SUSPEND,
                suspend_ms: 1_000,
                ..p(1, 1).filter("TAG", "x")
            };
            let (a, _) = tokio::join!(t.call(at_end.cmd()), async {
                tokio::time::sleep(Duration::from_millis(200)).await;
                t.call(send(&topic, 1, 102, "y")).await
            });
            obs!(o, "not woken by another tag: {}", describe(&a));
            t.shutdown().await;
            o
        }
    })
    .await;
}
