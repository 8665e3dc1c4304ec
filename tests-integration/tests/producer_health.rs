//! Producer health, as the consumers': the start fails fast with a typed error when no name
//! server answers; with `fail_fast(false)` it starts and says so; against the real broker
//! (through the fault proxy in front of its name server), a name server that stops answering is
//! reported and so is its return, sends to cached routes go on meanwhile, and a topic with no
//! route is reported once.

use std::time::{Duration, Instant};

use futures::StreamExt;
use rmq_client_core::ClientConfig;
use rmq_producer::{Message, Producer, ProducerEvent, TransactionState, transaction_fn};
use rmq_protocol::{RequestCode, ResponseCode};
use rmq_testkit::proxy::{FaultProxy, Rule, Scope};
use rmq_tests_integration::{Env, TEST_TIMEOUT, within};

const REQUEST_TIMEOUT: Duration = Duration::from_secs(1);
/// How long an expected event may take: a route refresh every 200 ms, each bounded by the
/// request timeout, on a loaded machine.
const EVENT_LIMIT: Duration = Duration::from_secs(10);

fn client(namesrv: &str) -> ClientConfig {
    ClientConfig::builder()
        .namesrv_addr(namesrv)
        .instance_name(rmq_testkit::unique_name("phealth"))
        .request_timeout(REQUEST_TIMEOUT)
        .poll_name_server_interval(Duration::from_millis(200))
        .build()
        .expect("client config")
}

fn tx_listener() -> impl rmq_producer::TransactionListener<()> {
    transaction_fn(
        |_msg, ()| Box::pin(async { TransactionState::Commit }),
        |_msg| Box::pin(async { TransactionState::Commit }),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_fails_fast_when_no_name_server_answers() {
    within(TEST_TIMEOUT, async {
        let (silent, _server) = rmq_tests_integration::name_server::silent().await;
        let refused = rmq_tests_integration::name_server::refusing();
        for namesrv in [silent.as_str(), refused.as_str()] {
            let started = Instant::now();
            let e = Producer::builder()
                .group(rmq_testkit::unique_name("phealth_pg"))
                .client_config(client(namesrv))
                .start()
                .await
                .expect_err("no name server: the producer does not start");
            let took = started.elapsed();
            println!("producer, name server {namesrv}: failed in {took:?}: {e}");
            assert!(e.is_name_server_unavailable(), "{e:?}");
            assert!(
                took < REQUEST_TIMEOUT + Duration::from_millis(500),
                "{took:?}"
            );

            let started = Instant::now();
            let e = Producer::builder()
                .group(rmq_testkit::unique_name("phealth_tx"))
                .client_config(client(namesrv))
                .transaction_listener(tx_listener())
                .start()
                .await
                .expect_err("no name server: the transactional producer does not start");
            let took = started.elapsed();
            println!("transactional producer, name server {namesrv}: failed in {took:?}: {e}");
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
async fn without_fail_fast_the_producer_starts_and_reports_it() {
    within(TEST_TIMEOUT, async {
        let (silent, _server) = rmq_tests_integration::name_server::silent().await;
        let producer = Producer::builder()
            .group(rmq_testkit::unique_name("phealth_pg"))
            .client_config(client(&silent))
            .fail_fast(false)
            .start()
            .await
            .expect("fail_fast(false): the producer starts");
        let mut events = producer.events();
        let first = events.next().await.expect("an event");
        assert!(
            matches!(first, ProducerEvent::NameServerUnreachable { .. }),
            "{first:?}"
        );
        assert_eq!(events.next().await, Some(ProducerEvent::Started));
        let e = producer
            .send(Message::new("phealth_topic", "x"))
            .await
            .expect_err("no route without a name server");
        assert!(e.is_name_server_unavailable() || e.is_timeout(), "{e:?}");
        producer.shutdown().await.expect("shutdown");
    })
    .await;
}

/// The next event `pick` accepts, within [`EVENT_LIMIT`].
async fn next_matching<S>(events: &mut S, what: &str, pick: impl Fn(&ProducerEvent) -> bool)
where
    S: futures::Stream<Item = ProducerEvent> + Unpin,
{
    let found = tokio::time::timeout(EVENT_LIMIT, async {
        while let Some(e) = events.next().await {
            if pick(&e) {
                return Some(e);
            }
        }
        None
    })
    .await;
    match found {
        Ok(Some(e)) => println!("event: {e:?}"),
        Ok(None) => panic!("the events ended before {what}"),
        Err(_) => panic!("no {what} within {EVENT_LIMIT:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn name_server_and_missing_topic_events_on_the_real_broker() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("phealth", 2).await;
        let proxy = FaultProxy::start(env.namesrv())
            .await
            .expect("proxy starts");
        // The name server knows no route of a new topic, nor TBW102 (as with auto-creation
        // off): the producer starts (a name server answered), its sends to the topic fail with
        // RouteNotFound, and the topic is reported once.
        proxy.set_rule_in(
            Scope::NameServer,
            RequestCode::GET_ROUTEINFO_BY_TOPIC,
            Rule::error(ResponseCode::TOPIC_NOT_EXIST),
        );
        let producer = Producer::builder()
            .group(rmq_testkit::unique_name("phealth_pg"))
            .client_config(client(proxy.namesrv_addr()))
            .start()
            .await
            .expect("producer starts");
        let mut events = producer.events();
        assert_eq!(events.next().await, Some(ProducerEvent::Started));
        let missing = rmq_testkit::unique_name("phealth_missing");
        for _ in 0..2 {
            let e = producer
                .send(Message::new(missing.as_str(), "x"))
                .await
                .expect_err("no route");
            assert_eq!(e.kind(), rmq_error::ErrorKind::TopicNotFound, "{e:?}");
        }
        assert_eq!(
            events.next().await,
            Some(ProducerEvent::TopicNotFound {
                topic: missing.clone()
            })
        );
        proxy.clear_rule(RequestCode::GET_ROUTEINFO_BY_TOPIC);
        producer
            .send(Message::new(topic.as_str(), "before"))
            .await
            .expect("send");

        // The name server stops answering: the periodic route refresh reports it, and the cached
        // route keeps serving sends.
        proxy.set_rule_in(
            Scope::NameServer,
            RequestCode::GET_ROUTEINFO_BY_TOPIC,
            Rule::Drop,
        );
        next_matching(&mut events, "NameServerUnreachable", |e| {
            matches!(e, ProducerEvent::NameServerUnreachable { .. })
        })
        .await;
        producer
            .send(Message::new(
                topic.as_str(),
                "while the name server is silent",
            ))
            .await
            .expect("a cached route serves sends");
        proxy.clear_rule(RequestCode::GET_ROUTEINFO_BY_TOPIC);
        next_matching(&mut events, "NameServerReachable", |e| {
            *e == ProducerEvent::NameServerReachable
        })
        .await;
        producer.shutdown().await.expect("shutdown");
        // The events end once the last handle is gone.
        drop(producer);
        let rest: Vec<ProducerEvent> = tokio::time::timeout(EVENT_LIMIT, events.collect())
            .await
            .expect("the events end after shutdown");
        assert!(
            !rest
                .iter()
                .any(|e| matches!(e, ProducerEvent::TopicNotFound { .. })),
            "the missing topic reported again: {rest:?}"
        );
        assert_eq!(rest.last(), Some(&ProducerEvent::ShutDown), "{rest:?}");
        proxy.shutdown().await;
    })
    .await;
}
