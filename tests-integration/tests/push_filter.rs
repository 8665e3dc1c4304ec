//! Issue 4, scenario 8: a tag expression (`a || b`) and an SQL92 expression (`a > 5` on a user
//! property) deliver exactly the matching messages.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use rmq_producer::Message;
use rmq_tests_integration::consumer::{self, ConsumerSpec, Filter};
use rmq_tests_integration::{Env, Recorder, TEST_TIMEOUT, within};

const QUEUES: i32 = 2;

/// Consumes `topic` with `filter` until every message of `matching` arrived and every queue is
/// consumed to its end (so a non-matching message would have been seen by then); returns the
/// delivered ids.
async fn consume_filtered(
    env: &Env,
    topic: &str,
    filter: Filter,
    matching: &HashSet<String>,
) -> Vec<String> {
    let group = rmq_testkit::unique_name("push_filter_cg");
    let rec = Arc::new(Recorder::new());
    let c = consumer::start(
        // A short long-poll: the consumer moves its offset past trailing non-matching messages
        // when a pull finds nothing new (as Java does), i.e. after the broker's hold.
        ConsumerSpec::new(env.namesrv(), &group, topic)
            .filter(filter)
            .suspend_timeout(Duration::from_secs(1)),
        consumer::recording(rec.clone(), 0, |_, _| false),
    )
    .await;
    rec.wait_for(Duration::from_secs(30), "every matching message", |s| {
        matching.iter().all(|id| s.counts.contains_key(id))
    })
    .await;
    // The broker skips what does not match: the committed offsets still reach the ends, and
    // by then any non-matching message would have been delivered.
    let max = env.max_offsets(topic, QUEUES).await;
    consumer::wait_local_committed(&c, topic, &max, Duration::from_secs(10)).await;
    c.shutdown().await.expect("clean shutdown");
    env.wait_committed_at_max(&group, topic, QUEUES, Duration::from_secs(5))
        .await;
    rec.with(|seen| {
        seen.deliveries
            .iter()
            .map(|d| d.msg.msg_id.clone())
            .collect()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tag_expression_delivers_exactly_the_matching_tags() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("push_tags", QUEUES).await;
        let producer = env.producer().await;
        let tags = [Some("a"), Some("b"), Some("c"), Some("ab"), None, Some("A")];
        let sent = env
            .send_spread(&producer, 240, |i| {
                let msg = Message::new(&topic, i.to_string());
                match tags[i % tags.len()] {
                    Some(t) => msg.with_tags(t),
                    None => msg,
                }
            })
            .await;
        producer.shutdown().await.expect("producer shutdown");
        let matching: HashSet<String> = sent
            .iter()
            .filter(|s| matches!(tags[s.index % tags.len()], Some("a" | "b")))
            .map(|s| s.msg_id.clone())
            .collect();
        assert_eq!(matching.len(), 80);

        let got = consume_filtered(&env, &topic, Filter::Tags("a || b".into()), &matching).await;
        let unique: HashSet<String> = got.iter().cloned().collect();
        assert_eq!(got.len(), unique.len(), "each once");
        assert_eq!(unique, matching, "exactly the messages tagged a or b");
        env.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql92_expression_delivers_exactly_the_matching_properties() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("push_sql", QUEUES).await;
        let producer = env.producer().await;
        // a = 0..=10 by index, and every 12th message without the property.
        let value = |i: usize| (i % 12 != 11).then_some(i % 12);
        let sent = env
            .send_spread(&producer, 240, |i| {
                let msg = Message::new(&topic, i.to_string()).with_tags("t");
                match value(i) {
                    Some(a) => msg.with_property("a", a.to_string()),
                    None => msg,
                }
            })
            .await;
        producer.shutdown().await.expect("producer shutdown");
        let matching: HashSet<String> = sent
            .iter()
            .filter(|s| value(s.index).is_some_and(|a| a > 5))
            .map(|s| s.msg_id.clone())
            .collect();
        assert_eq!(matching.len(), 100);

        let got = consume_filtered(&env, &topic, Filter::Sql("a > 5".into()), &matching).await;
        let unique: HashSet<String> = got.iter().cloned().collect();
        assert_eq!(got.len(), unique.len(), "each once");
        assert_eq!(unique, matching, "exactly the messages with a > 5");
        env.shutdown().await;
    })
    .await;
}
