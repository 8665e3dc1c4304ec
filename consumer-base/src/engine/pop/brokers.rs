//! [`readable_brokers`]: the brokers a topic is popped from.

use std::collections::BTreeSet;

use rmq_client_core::ClientInstance;
use rmq_protocol::MessageQueue;

/// The brokers of `topic` with readable queues: their names and master
/// addresses, by name (the route is fetched when unknown).
///
/// # Errors
///
/// The route lookup's or a master address lookup's error.
pub async fn readable_brokers(
    instance: &ClientInstance,
    topic: &str,
) -> rmq_client_core::Result<Vec<(String, String)>> {
    let route = instance.route(topic).await?;
    let names: BTreeSet<&str> = route
        .subscribe_queues()
        .iter()
        .map(|q| q.broker_name.as_str())
        .collect();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let mq = MessageQueue::new(topic, name, 0);
        out.push((name.to_owned(), instance.master_addr(&mq).await?));
    }
    Ok(out)
}
