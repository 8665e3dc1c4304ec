//! The lite pull consumer's metrics against the real broker, through a
//! Prometheus recorder (this test binary's global recorder): the messages
//! received and the pull round trips of a drained topic, its rebalance, and
//! every queue's lag, above 0 while messages are not committed and at 0
//! once everything is.

use std::collections::BTreeMap;
use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use rmq_consumer_pull::{ConsumeFrom, LitePullConsumer};
use rmq_testkit::env::{Env, send_to};
use rmq_testkit::prometheus::samples;
use rmq_testkit::wait::{TEST_TIMEOUT, within};

const QUEUES: usize = 4;
const PER_QUEUE: usize = 10;

fn lags(handle: &PrometheusHandle, group_label: &str) -> BTreeMap<String, f64> {
    samples(
        &handle.render(),
        "messaging_rocketmq_consumer_lag",
        group_label,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn received_pull_duration_and_lag_of_a_drain() {
    within(TEST_TIMEOUT, async {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        metrics::set_global_recorder(recorder).expect("the only recorder of this test binary");

        let env = Env::new().await;
        let topic = env
            .topic("lite_metrics", i32::try_from(QUEUES).expect("small"))
            .await;
        let producer = env.producer().await;
        for q in env.queues(&topic, i32::try_from(QUEUES).expect("small")) {
            send_to(&producer, &q, "m", PER_QUEUE).await;
        }
        let group = rmq_testkit::unique_name("lite_metrics");
        let group_label = format!("messaging_consumer_group_name=\"{group}\"");
        let consumer = LitePullConsumer::builder()
            .group(&group)
            .namesrv_addr(env.namesrv())
            .consume_from(ConsumeFrom::FirstOffset)
            .subscribe(&topic, "*")
            .auto_commit(false)
            .poll_batch_size(5)
            .start()
            .await
            .expect("lite consumer starts");

        // Part of the topic handed out and committed: some lag is left.
        let mut got = 0;
        while got == 0 {
            got += consumer
                .poll(Duration::from_secs(1))
                .await
                .expect("poll")
                .len();
        }
        consumer.commit().await.expect("commit");
        let lag = lags(&handle, &group_label);
        assert_eq!(lag.len(), QUEUES, "a lag gauge per assigned queue: {lag:?}");
        let total: f64 = lag.values().sum();
        assert!(
            total > 0.0,
            "{got} of {} committed, yet no lag: {lag:?}",
            QUEUES * PER_QUEUE
        );

        // Everything handed out and committed: every lag is 0.
        while got < QUEUES * PER_QUEUE {
            got += consumer
                .poll(Duration::from_secs(1))
                .await
                .expect("poll")
                .len();
        }
        assert_eq!(got, QUEUES * PER_QUEUE, "nothing more than was sent");
        consumer.commit().await.expect("commit");
        let lag = lags(&handle, &group_label);
        assert_eq!(lag.len(), QUEUES, "a lag gauge per assigned queue: {lag:?}");
        assert!(lag.values().all(|v| *v == 0.0), "drained, yet lag: {lag:?}");

        let body = handle.render();
        let received: f64 = samples(
            &body,
            "messaging_rocketmq_consumer_received_messages",
            &group_label,
        )
        .values()
        .sum();
        assert_eq!(received, (QUEUES * PER_QUEUE) as f64, "received counter");
        let pulls: f64 = samples(
            &body,
            "messaging_client_operation_duration_count",
            &group_label,
        )
        .iter()
        .filter(|(k, _)| k.contains("messaging_operation_name=\"receive\""))
        .map(|(_, v)| v)
        .sum();
        assert!(
            pulls >= QUEUES as f64,
            "one pull per queue at least, {pulls} recorded"
        );
        let rebalances: f64 = samples(
            &body,
            "messaging_rocketmq_consumer_rebalances",
            &group_label,
        )
        .values()
        .sum();
        assert!(rebalances >= 1.0, "the first rebalance is counted");

        consumer.shutdown().await.expect("consumer stops");
        producer.shutdown().await.expect("producer stops");
    })
    .await;
}
