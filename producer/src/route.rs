//! The publish queues of a topic (Java `tryToFindTopicPublishInfo`): the
//! topic's own route from the client instance, or, for a topic the name
//! servers do not know, queues derived from `TBW102`'s route so that the
//! broker auto-creates the topic on the first send.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rmq_client_core::{ClientInstance, TopicRouteInfo};
use rmq_protocol::MessageQueue;
use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::health::Health;
use crate::validate::AUTO_CREATE_TOPIC;

/// Where a topic's publish queues come from.
#[derive(Debug, Clone)]
pub(crate) enum PublishQueues {
    /// The topic's own route.
    Route(Arc<TopicRouteInfo>),
    /// Queues derived from `TBW102` (topic not created yet).
    Fallback(Arc<[MessageQueue]>),
}

impl PublishQueues {
    pub(crate) fn queues(&self) -> &[MessageQueue] {
        match self {
            PublishQueues::Route(r) => r.publish_queues(),
            PublishQueues::Fallback(q) => q,
        }
    }
}

#[derive(Debug)]
struct Fallback {
    queues: Arc<[MessageQueue]>,
    until: Instant,
}

/// The producer's fallback routes, kept for one route-poll interval before
/// the topic's own route is looked up again (Java keeps the derived route in
/// its publish table until the periodic refresh replaces it).
#[derive(Debug)]
pub(crate) struct Routes {
    fallbacks: RwLock<HashMap<String, Fallback>>,
    /// Told of topics found and not found by a lookup.
    health: Arc<Health>,
}

impl Routes {
    /// No fallback yet; lookups report to `health`.
    pub(crate) fn new(health: Arc<Health>) -> Self {
        Routes {
            fallbacks: RwLock::default(),
            health,
        }
    }

    /// The topic's publish queues, looking the route up when needed.
    ///
    /// # Errors
    ///
    /// [`Error::NoWritableQueue`] when the route has no writable queue; the
    /// client-core error of the lookup, e.g. `RouteNotFound` when neither
    /// the topic nor `TBW102` has a route.
    pub(crate) async fn publish_queues(
        &self,
        instance: &ClientInstance,
        topic: &str,
        default_queue_nums: i32,
    ) -> Result<PublishQueues> {
        if let Some(route) = instance.cached_route(topic) {
            if !route.publish_queues().is_empty() {
                return Ok(PublishQueues::Route(route));
            }
        }
        if let Some(queues) = self.fresh_fallback(topic, Instant::now()) {
            return Ok(PublishQueues::Fallback(queues));
        }
        // Boxed: the name server lookup is rare, and inline it would make
        // every send's future kilobytes large.
        Box::pin(self.look_up(instance, topic, default_queue_nums)).await
    }

    /// [`publish_queues`](Self::publish_queues) when neither the cache nor a
    /// fallback answers: asks the name server.
    async fn look_up(
        &self,
        instance: &ClientInstance,
        topic: &str,
        default_queue_nums: i32,
    ) -> Result<PublishQueues> {
        let looked_up = match instance.cached_route(topic) {
            // Cached but without writable queues: ask again (Java: `!ok()`).
            Some(_) => instance.refresh_route(topic).await,
            None => instance.route(topic).await,
        };
        match looked_up {
            Ok(route) if !route.publish_queues().is_empty() => {
                self.forget(topic);
                self.health.topic_found(topic);
                Ok(PublishQueues::Route(route))
            }
            Ok(_) => Err(Error::NoWritableQueue {
                topic: topic.to_owned(),
            }),
            Err(rmq_client_core::Error::RouteNotFound { .. }) => {
                let template = match instance.route(AUTO_CREATE_TOPIC).await {
                    Ok(t) => t,
                    // No TBW102 either (auto-create off): the topic is missing.
                    Err(rmq_client_core::Error::RouteNotFound { .. }) => {
                        self.health.topic_not_found(topic);
                        return Err(rmq_client_core::Error::RouteNotFound {
                            topic: topic.to_owned(),
                        }
                        .into());
                    }
                    Err(e) => return Err(e.into()),
                };
                let queues: Arc<[MessageQueue]> =
                    derive_queues(topic, template.publish_queues(), default_queue_nums).into();
                if queues.is_empty() {
                    return Err(Error::NoWritableQueue {
                        topic: topic.to_owned(),
                    });
                }
                tracing::debug!(
                    topic,
                    queues = queues.len(),
                    "no route for the topic; sending with TBW102's route so the broker creates it"
                );
                let refresh = instance.config().poll_name_server_interval();
                self.remember(topic, queues.clone(), refresh);
                Ok(PublishQueues::Fallback(queues))
            }
            Err(e) => Err(e.into()),
        }
    }

    fn fresh_fallback(&self, topic: &str, now: Instant) -> Option<Arc<[MessageQueue]>> {
        let map = match self.fallbacks.read() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        map.get(topic)
            .filter(|f| now < f.until)
            .map(|f| f.queues.clone())
    }

    fn remember(&self, topic: &str, queues: Arc<[MessageQueue]>, keep: Duration) {
        let mut map = match self.fallbacks.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        map.insert(
            topic.to_owned(),
            Fallback {
                queues,
                until: Instant::now() + keep,
            },
        );
    }

    fn forget(&self, topic: &str) {
        let mut map = match self.fallbacks.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        map.remove(topic);
    }
}

/// Java `updateTopicRouteInfoFromNameServer(topic, isDefault = true, ..)`:
/// for every broker of the template route, `min(default_queue_nums, its
/// queue count)` queues of `topic`, ids from 0, brokers in template order.
pub(crate) fn derive_queues(
    topic: &str,
    template: &[MessageQueue],
    default_queue_nums: i32,
) -> Vec<MessageQueue> {
    let mut per_broker: Vec<(&str, i32)> = Vec::new();
    for q in template {
        match per_broker.iter_mut().find(|(b, _)| *b == q.broker_name) {
            Some((_, n)) => *n = n.saturating_add(1),
            None => per_broker.push((&q.broker_name, 1)),
        }
    }
    per_broker
        .into_iter()
        .flat_map(|(broker, n)| {
            (0..n.min(default_queue_nums)).map(move |id| MessageQueue::new(topic, broker, id))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_from_template() {
        let template: Vec<_> = (0..8)
            .map(|i| MessageQueue::new("TBW102", "a", i))
            .chain((0..2).map(|i| MessageQueue::new("TBW102", "b", i)))
            .collect();
        let q = derive_queues("new", &template, 4);
        let want: Vec<_> = (0..4)
            .map(|i| MessageQueue::new("new", "a", i))
            .chain((0..2).map(|i| MessageQueue::new("new", "b", i)))
            .collect();
        assert_eq!(q, want);
        assert!(derive_queues("new", &[], 4).is_empty());
    }

    #[test]
    fn fallback_expires() {
        let routes = Routes::new(Health::started(None, None));
        let q: Arc<[MessageQueue]> = vec![MessageQueue::new("t", "a", 0)].into();
        let now = Instant::now();
        routes.remember("t", q.clone(), Duration::from_secs(30));
        assert!(routes.fresh_fallback("t", now).is_some());
        assert!(
            routes
                .fresh_fallback("t", now + Duration::from_secs(31))
                .is_none()
        );
        assert!(routes.fresh_fallback("u", now).is_none());
        routes.forget("t");
        assert!(routes.fresh_fallback("t", now).is_none());
    }
}
