//! NEEDS THE LOCAL TWO-BROKER CLUSTER (`scripts/rocketmq-local.sh`): starts `broker-b`, KILLS it,
//! starts it again, and stops it at the end (the other tests expect broker-a alone). Run alone by
//! the broker-fault step of scripts/test.sh.
//!
//! A consumer and a producer whose topic lives on broker-b report the broker connection lost,
//! then restored, in their event streams.

use std::time::Duration;

use futures::{Stream, StreamExt};
use rmq_client_core::ClientConfig;
use rmq_consumer_push::{ConsumeResult, ConsumerEvent, PushConsumer, listener};
use rmq_producer::{Message, Producer, ProducerEvent, ProducerState};
use rmq_tests_integration::{Env, within};

/// Heartbeats and route refreshes every second: the events come within seconds.
fn client(env: &Env, name: &str) -> ClientConfig {
    ClientConfig::builder()
        .namesrv_addr(env.namesrv())
        .instance_name(rmq_testkit::unique_name(name))
        .heartbeat_broker_interval(Duration::from_secs(1))
        .poll_name_server_interval(Duration::from_secs(1))
        .request_timeout(Duration::from_secs(2))
        .build()
        .expect("client config")
}

/// The first event `pick` accepts, within `limit`.
async fn first<E: std::fmt::Debug, T>(
    events: &mut (impl Stream<Item = E> + Unpin),
    limit: Duration,
    what: &str,
    mut pick: impl FnMut(&E) -> Option<T>,
) -> T {
    let found = tokio::time::timeout(limit, async {
        while let Some(e) = events.next().await {
            println!("{what}: event {e:?}");
            if let Some(t) = pick(&e) {
                return Some(t);
            }
        }
        None
    })
    .await;
    match found {
        Ok(Some(t)) => t,
        Ok(None) => panic!("{what}: the event stream ended"),
        Err(_) => panic!("{what}: no such event within {limit:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "kills and restarts a local broker: run alone by the broker-fault step of scripts/test.sh (cargo test -- --ignored)"]
async fn broker_connection_lost_then_restored() {
    within(Duration::from_secs(900), async {
        let env = Env::new().await;
        let addr_b = rmq_testkit::second_broker().await;
        let topic = rmq_testkit::unique_name("link");
        rmq_testkit::admin::create_topic(env.admin.remoting(), env.namesrv(), &addr_b, &topic, 2)
            .await
            .expect("topic on broker-b");

        let producer = Producer::builder()
            .group(rmq_testkit::unique_name("link_pg"))
            .client_config(client(&env, "link_p"))
            .start()
            .await
            .expect("producer starts");
        // The producer's heartbeats go to the brokers of the topics it sent to.
        producer
            .send(Message::new(topic.as_str(), "hello"))
            .await
            .expect("send to broker-b");
        let consumer = PushConsumer::builder()
            .group(rmq_testkit::unique_name("link_cg"))
            .client_config(client(&env, "link_c"))
            .subscribe(topic.as_str(), "*")
            .start(listener!(async |_msgs, _ctx| ConsumeResult::Success))
            .await
            .expect("consumer starts");
        let mut consumer_events = consumer.events();
        let mut producer_events = producer.events();
        assert_eq!(producer_events.next().await, Some(ProducerEvent::Started));
        assert_eq!(producer.state(), ProducerState::Running);

        rmq_testkit::kill_broker(rmq_testkit::BROKER_B).await;
        let limit = Duration::from_secs(60);
        let error = first(&mut consumer_events, limit, "consumer", |e| match e {
            ConsumerEvent::BrokerConnectionLost { addr, error } if *addr == addr_b => {
                Some(error.clone())
            }
            _ => None,
        })
        .await;
        println!("consumer: broker-b lost: {error}");
        first(&mut producer_events, limit, "producer", |e| {
            matches!(e, ProducerEvent::BrokerConnectionLost { addr, .. } if *addr == addr_b)
                .then_some(())
        })
        .await;

        let restarted = rmq_testkit::start_broker(rmq_testkit::BROKER_B).await;
        assert_eq!(restarted, addr_b);
        let limit = Duration::from_secs(120);
        first(&mut consumer_events, limit, "consumer", |e| {
            (*e == ConsumerEvent::BrokerConnectionRestored {
                addr: addr_b.clone(),
            })
            .then_some(())
        })
        .await;
        first(&mut producer_events, limit, "producer", |e| {
            (*e == ProducerEvent::BrokerConnectionRestored {
                addr: addr_b.clone(),
            })
            .then_some(())
        })
        .await;

        consumer.shutdown().await.expect("consumer shutdown");
        producer.shutdown().await.expect("producer shutdown");
        assert_eq!(producer.state(), ProducerState::ShutDown);
        env.shutdown().await;
        // Gone again, as the other tests expect: killed (instant; a graceful 5.x stop takes
        // about 15 s), its store kept for the next start.
        rmq_testkit::kill_broker(rmq_testkit::BROKER_B).await;
    })
    .await;
}
