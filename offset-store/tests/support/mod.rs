//! Shared helpers of the offset-store integration tests (real broker via
//! rmq-testkit).
#![allow(dead_code, unreachable_pub)]

use rmq_client_core::ClientInstance;
pub use rmq_testkit::client::{TestConsumer, create_topic, instance, poll_until, within};

/// An instance with a registered consumer of a fresh `queues`-queue topic:
/// (instance, topic, group).
pub async fn setup(tag: &str, queues: i32) -> (ClientInstance, String, String) {
    let i = instance(tag).await;
    let topic = rmq_testkit::unique_name(&format!("{tag}_t"));
    let group = rmq_testkit::unique_name(&format!("GID_{tag}"));
    create_topic(&i, &topic, queues).await;
    i.route(&topic).await.expect("route");
    i.register_consumer(&group, TestConsumer::new(&group, &topic))
        .await
        .expect("consumer registered");
    (i, topic, group)
}
