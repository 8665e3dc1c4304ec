//! Which queues of a topic can be received from: [`readable`] (the
//! proxy's permission) and [`ReadableQueues`] (a topic's route from
//! `QueryRoute`: master brokers, readable, cached a while).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmq_grpc::proto;
use tokio::time::Instant;

use super::calls::ProxyCalls;

/// How long a topic's readable queues are used before asking again.
pub const ROUTE_TTL: Duration = Duration::from_secs(30);

/// Whether the proxy lets `queue` be read.
pub fn readable(queue: &proto::MessageQueue) -> bool {
    let p = proto::Permission::try_from(queue.permission).unwrap_or(proto::Permission::None);
    matches!(p, proto::Permission::Read | proto::Permission::ReadWrite)
}

type Cached = (Instant, Arc<Vec<proto::MessageQueue>>);

/// The readable queues of master brokers of each topic (Java
/// `SimpleConsumerImpl`: a receive takes the next one), from `QueryRoute`,
/// asked again after [`ROUTE_TTL`].
#[derive(Debug, Default)]
pub struct ReadableQueues {
    cache: Mutex<HashMap<String, Cached>>,
}

impl ReadableQueues {
    /// An empty cache.
    pub fn new() -> Self {
        ReadableQueues::default()
    }

    /// The readable queues of master brokers of `topic`; empty when it has
    /// none (not cached: asked again next time).
    ///
    /// # Errors
    ///
    /// `QueryRoute`'s (`TOPIC_NOT_FOUND` for an unknown topic).
    pub async fn of<S: ProxyCalls>(
        &self,
        session: &S,
        topic: &str,
    ) -> rmq_grpc::Result<Arc<Vec<proto::MessageQueue>>> {
        if let Some((at, q)) = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(topic)
        {
            if at.elapsed() < ROUTE_TTL {
                return Ok(q.clone());
            }
        }
        let all = session.query_route(topic).await?;
        let queues: Vec<_> = all
            .into_iter()
            .filter(|q| readable(q) && q.broker.as_ref().is_some_and(|b| b.id == 0))
            .collect();
        let queues = Arc::new(queues);
        if !queues.is_empty() {
            self.cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(topic.to_owned(), (Instant::now(), queues.clone()));
        }
        Ok(queues)
    }
}

#[cfg(test)]
mod tests {
    use super::super::script::{Call, Script, queue};
    use super::*;

    fn ids(q: &[proto::MessageQueue]) -> Vec<i32> {
        q.iter().map(|q| q.id).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn readable_queues_of_masters_cached_a_while() {
        let (read, write, rw, none) = (
            proto::Permission::Read as i32,
            proto::Permission::Write as i32,
            proto::Permission::ReadWrite as i32,
            proto::Permission::None as i32,
        );
        let mut slave = queue("b", 4, rw);
        if let Some(b) = slave.broker.as_mut() {
            b.id = 1;
        }
        let route = vec![
            queue("b", 0, read),
            queue("b", 1, write),
            queue("b", 2, rw),
            queue("b", 3, none),
            slave,
        ];
        let script = Script::new();
        script.route_answers([Ok(route.clone()), Ok(route), Ok(vec![]), Ok(vec![])]);
        let cache = ReadableQueues::new();
        assert_eq!(ids(&cache.of(&script, "T").await.unwrap()), [0, 2]);
        tokio::time::sleep(ROUTE_TTL - Duration::from_millis(1)).await;
        assert_eq!(ids(&cache.of(&script, "T").await.unwrap()), [0, 2]);
        assert_eq!(script.calls().len(), 1, "cached");
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(ids(&cache.of(&script, "T").await.unwrap()), [0, 2]);
        assert_eq!(script.calls().len(), 2, "asked again after the TTL");
        // No readable queue: not cached.
        assert!(cache.of(&script, "U").await.unwrap().is_empty());
        assert!(cache.of(&script, "U").await.unwrap().is_empty());
        assert_eq!(script.calls().last(), Some(&Call::Route("U".into())));
        assert_eq!(script.calls().len(), 4);
    }
}
