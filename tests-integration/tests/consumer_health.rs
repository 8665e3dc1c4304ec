//! Consumer health: start fails fast with a typed error when no name server answers; with
//! `fail_fast(false)` it starts and says so (state and events); against the real broker, the
//! events and the rebalance listener report started, assigned queues and a missing topic.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use rmq_client_core::ClientConfig;
use rmq_consumer_pull::LitePullConsumer;
use rmq_consumer_push::{
    ConsumeResult, ConsumerEvent, ConsumerState, MessageQueue, PushConsumer, RebalanceListener,
    listener_fn,
};
use rmq_tests_integration::{Env, TEST_TIMEOUT, within};

const REQUEST_TIMEOUT: Duration = Duration::from_secs(1);

fn client(namesrv: &str) -> ClientConfig {
    ClientConfig::builder()
        .namesrv_addr(namesrv)
        .instance_name(rmq_testkit::unique_name("health"))
        .request_timeout(REQUEST_TIMEOUT)
        .build()
        .expect("client config")
}

fn ok_listener() -> impl rmq_consumer_push::MessageListener {
    listener_fn(|_, _| Box::pin(async { ConsumeResult::Success }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_fails_fast_when_no_name_server_answers() {
    within(TEST_TIMEOUT, async {
        let (silent, _server) = rmq_tests_integration::name_server::silent().await;
        let refused = rmq_tests_integration::name_server::refusing();
        for namesrv in [silent.as_str(), refused.as_str()] {
            let started = Instant::now();
            let e = PushConsumer::builder()
                .group(rmq_testkit::unique_name("health_cg"))
                .client_config(client(namesrv))
                .subscribe("health_topic", "*")
                .start(ok_listener())
                .await
                .expect_err("no name server: the push consumer does not start");
            let took = started.elapsed();
            println!("push consumer, name server {namesrv}: failed in {took:?}: {e}");
            assert!(e.is_name_server_unavailable(), "{e:?}");
            assert!(
                took < REQUEST_TIMEOUT + Duration::from_millis(500),
                "{took:?}"
            );

            let started = Instant::now();
            let e = LitePullConsumer::builder()
                .group(rmq_testkit::unique_name("health_cg"))
                .client_config(client(namesrv))
                .subscribe("health_topic", "*")
                .start()
                .await
                .expect_err("no name server: the lite consumer does not start");
            let took = started.elapsed();
            println!("lite consumer, name server {namesrv}: failed in {took:?}: {e}");
            assert!(e.is_name_server_unavailable(), "{e:?}");
            assert!(
                took < REQUEST_TIMEOUT + Duration::from_millis(500),
                "{took:?}"
            );
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_fail_fast_the_consumers_start_and_report_it() {
    within(TEST_TIMEOUT, async {
        let (silent, _server) = rmq_tests_integration::name_server::silent().await;
        let push = PushConsumer::builder()
            .group(rmq_testkit::unique_name("health_cg"))
            .client_config(client(&silent))
            .subscribe("health_topic", "*")
            .fail_fast(false)
            .start(ok_listener())
            .await
            .expect("fail_fast(false): the push consumer starts");
        assert_eq!(push.state(), ConsumerState::NoNameServer);
        let first: Vec<ConsumerEvent> = push.events().take(2).collect().await;
        assert!(
            matches!(first[0], ConsumerEvent::NameServerUnreachable { .. }),
            "{first:?}"
        );
        assert_eq!(first[1], ConsumerEvent::Started);
        push.shutdown().await.expect("shutdown");
        assert_eq!(push.state(), ConsumerState::ShutDown);

        let lite = LitePullConsumer::builder()
            .group(rmq_testkit::unique_name("health_cg"))
            .client_config(client(&silent))
            .subscribe("health_topic", "*")
            .fail_fast(false)
            .start()
            .await
            .expect("fail_fast(false): the lite consumer starts");
        assert_eq!(lite.state(), ConsumerState::NoNameServer);
        let mut events = lite.events();
        let e = events.next().await.expect("an event");
        assert!(
            matches!(e, ConsumerEvent::NameServerUnreachable { .. }),
            "{e:?}"
        );
        assert_eq!(events.next().await, Some(ConsumerEvent::Started));
        lite.shutdown().await.expect("shutdown");
        assert_eq!(events.next().await, Some(ConsumerEvent::ShutDown));
    })
    .await;
}

#[derive(Default)]
struct Seen {
    assigned: Mutex<Vec<MessageQueue>>,
    revoked: Mutex<Vec<MessageQueue>>,
}

struct Listener(Arc<Seen>);

impl RebalanceListener for Listener {
    fn on_assigned(&self, _topic: &str, queues: &[MessageQueue]) {
        self.0
            .assigned
            .lock()
            .expect("lock")
            .extend_from_slice(queues);
    }
    fn on_revoked(&self, _topic: &str, queues: &[MessageQueue]) {
        self.0
            .revoked
            .lock()
            .expect("lock")
            .extend_from_slice(queues);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_and_rebalance_listener_on_the_real_broker() {
    within(TEST_TIMEOUT, async {
        const QUEUES: i32 = 4;
        let env = Env::new().await;
        let topic = env.topic("health", QUEUES).await;
        let missing = rmq_testkit::unique_name("health_missing");

        // Push: every queue assigned at start; the missing topic reported.
        let seen = Arc::new(Seen::default());
        let push = PushConsumer::builder()
            .group(rmq_testkit::unique_name("health_cg"))
            .namesrv_addr(env.namesrv())
            .subscribe(topic.as_str(), "*")
            .subscribe(missing.as_str(), "*")
            .rebalance_listener(Listener(seen.clone()))
            .start(ok_listener())
            .await
            .expect("the push consumer starts");
        assert_eq!(push.state(), ConsumerState::Running);
        let want: Vec<MessageQueue> = (0..QUEUES).map(|i| env.mq(&topic, i)).collect();
        // The group's retry topic queues come too (as in Java).
        let of_topic: Vec<MessageQueue> = seen
            .assigned
            .lock()
            .expect("lock")
            .iter()
            .filter(|mq| mq.topic == topic)
            .cloned()
            .collect();
        assert_eq!(of_topic, want);
        let mut events: Vec<ConsumerEvent> = Vec::new();
        let mut stream = push.events();
        while let Some(e) = stream.next().await {
            let started = e == ConsumerEvent::Started;
            events.push(e);
            if started {
                break;
            }
        }
        assert!(
            events.contains(&ConsumerEvent::TopicNotFound {
                topic: missing.clone()
            }),
            "{events:?}"
        );
        assert!(
            events.contains(&ConsumerEvent::QueuesAssigned {
                topic: topic.clone(),
                queues: want.clone()
            }),
            "{events:?}"
        );
        assert!(events.contains(&ConsumerEvent::Started), "{events:?}");
        push.shutdown().await.expect("shutdown");

        // Lite with assign: assigned, then revoked when the set changes.
        let seen = Arc::new(Seen::default());
        let lite = LitePullConsumer::builder()
            .group(rmq_testkit::unique_name("health_cg"))
            .namesrv_addr(env.namesrv())
            .assign(want.clone())
            .rebalance_listener(Listener(seen.clone()))
            .start()
            .await
            .expect("the lite consumer starts");
        lite.assign(want[..1].to_vec()).await.expect("assign");
        assert_eq!(*seen.assigned.lock().expect("lock"), want);
        assert_eq!(*seen.revoked.lock().expect("lock"), want[1..]);
        let events: Vec<ConsumerEvent> = lite.events().take(3).collect().await;
        assert_eq!(
            events,
            [
                ConsumerEvent::QueuesAssigned {
                    topic: topic.clone(),
                    queues: want.clone()
                },
                ConsumerEvent::Started,
                ConsumerEvent::QueuesRevoked {
                    topic: topic.clone(),
                    queues: want[1..].to_vec()
                },
            ]
        );
        lite.shutdown().await.expect("shutdown");
        env.shutdown().await;
    })
    .await;
}
