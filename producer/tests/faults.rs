//! Retries, fault handling and dead brokers, through the testkit's fault
//! proxy in front of the real name server and broker.

use std::time::Duration;

use rmq_producer::{Error, Message, Producer, UnsentExt};
use rmq_protocol::{RequestCode, ResponseCode};
use rmq_testkit::env::Env;
use rmq_testkit::proxy::{FaultProxy, Rule};
use rmq_testkit::wait::{LONG_TEST_TIMEOUT, within};

const SEND: RequestCode = RequestCode::SEND_MESSAGE_V2;
const SEND_TIMEOUT: Duration = Duration::from_secs(2);

fn attempts(e: &rmq_error::Error) -> u32 {
    match e.downcast_ref::<Error>() {
        Some(Error::Send { attempts, .. }) => *attempts,
        other => panic!("not a send error: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_follow_the_java_rules_and_dead_brokers_fail_in_time() {
    within(LONG_TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("faults", 4).await;
        let proxy = FaultProxy::start(&env.broker.namesrv_addr)
            .await
            .expect("proxy");
        let p = Producer::builder()
            .group(rmq_testkit::unique_name("pg"))
            .namesrv_addr(proxy.namesrv_addr())
            .send_timeout(SEND_TIMEOUT)
            .start()
            .await
            .expect("start");
        p.send(Message::new(&topic, "through the proxy"))
            .await
            .expect("send through the proxy");

        // A retryable broker code: 1 + 2 attempts, then the broker's error.
        proxy.reset_counts();
        proxy.set_rule(
            SEND,
            Rule::error_with(ResponseCode::SYSTEM_BUSY, "injected"),
        );
        let e = p.send(Message::new(&topic, "busy")).await.unwrap_err();
        assert_eq!(attempts(&e), 3, "{e:?}");
        assert_eq!(e.response_code(), Some(ResponseCode::SYSTEM_BUSY));
        assert!(e.is_retryable());
        assert_eq!(proxy.request_count(SEND), 3);
        let back = e.into_message().expect("handed back");
        assert_eq!(&back.body[..], b"busy");
        assert!(back.unique_key().is_some());

        // A non-retryable code: one attempt.
        proxy.reset_counts();
        proxy.set_rule(SEND, Rule::error(ResponseCode::MESSAGE_ILLEGAL));
        let e = p.send(Message::new(&topic, "illegal")).await.unwrap_err();
        assert_eq!(attempts(&e), 1, "{e:?}");
        assert_eq!(e.response_code(), Some(ResponseCode::MESSAGE_ILLEGAL));
        assert!(!e.is_retryable());
        assert_eq!(proxy.request_count(SEND), 1);

        // Selector and queue sends are never retried.
        proxy.reset_counts();
        proxy.set_rule(SEND, Rule::error(ResponseCode::SYSTEM_BUSY));
        let e = p
            .send_with_selector(Message::new(&topic, "ordered"), |_, _| 0)
            .await
            .unwrap_err();
        assert_eq!(attempts(&e), 1, "{e:?}");
        assert_eq!(proxy.request_count(SEND), 1);

        // The broker closes every connection: three quick failures.
        proxy.set_rule(SEND, Rule::CloseConnection);
        let started = tokio::time::Instant::now();
        let e = p.send(Message::new(&topic, "closed")).await.unwrap_err();
        assert_eq!(attempts(&e), 3, "{e:?}");
        assert!(e.is_retryable(), "{e:?}");
        assert!(started.elapsed() < SEND_TIMEOUT, "{:?}", started.elapsed());

        // The broker never answers: the send timeout bounds the call.
        proxy.set_rule(SEND, Rule::Drop);
        let started = tokio::time::Instant::now();
        let e = p.send(Message::new(&topic, "silent")).await.unwrap_err();
        let took = started.elapsed();
        assert!(e.is_timeout(), "{e:?}");
        assert!(took >= SEND_TIMEOUT - Duration::from_millis(50), "{took:?}");
        assert!(took < SEND_TIMEOUT + Duration::from_millis(500), "{took:?}");
        let shown = rmq_producer_error_chain(&e);
        assert!(shown.contains("timeout"), "{shown}");

        // Faults cleared: the only broker is used again at once, even though
        // it is isolated in the fault table.
        proxy.clear_all();
        p.send(Message::new(&topic, "recovered"))
            .await
            .expect("send after the faults");

        // Every broker (and the name server) gone: connections are refused.
        proxy.shutdown().await;
        let started = tokio::time::Instant::now();
        let e = p.send(Message::new(&topic, "dead")).await.unwrap_err();
        assert!(started.elapsed() < SEND_TIMEOUT + Duration::from_millis(500));
        assert!(e.is_retryable(), "{e:?}");
        assert!(attempts(&e) >= 1, "{e:?}");
        p.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_name_server_fails_fast_with_a_clear_error() {
    within(LONG_TEST_TIMEOUT, async {
        // Port 1 on loopback: nothing listens. By default the start fails
        // (`fail_fast`, tests-integration's producer_health.rs); without it
        // the producer starts and its sends fail fast.
        let p = Producer::builder()
            .group(rmq_testkit::unique_name("pg"))
            .namesrv_addr("127.0.0.1:1")
            .fail_fast(false)
            .start()
            .await
            .expect("fail_fast(false): start needs no name server");
        let started = tokio::time::Instant::now();
        let e = p
            .send(Message::new("no_such_cluster_topic", "x"))
            .await
            .unwrap_err();
        assert!(started.elapsed() <= p.config().send_timeout() + Duration::from_millis(500));
        assert_eq!(attempts(&e), 0, "{e:?}");
        assert!(
            matches!(
                e.downcast_ref::<Error>().map(Error::inner),
                Some(Error::Client(_) | Error::Timeout { .. })
            ),
            "{e:?}"
        );
        let shown = rmq_producer_error_chain(&e);
        assert!(
            shown.contains("name server") || shown.contains("timeout"),
            "{shown}"
        );
        p.shutdown().await.expect("producer shutdown");
    })
    .await;
}

/// The error and its sources, one per line.
fn rmq_producer_error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push_str("\n  caused by: ");
        out.push_str(&s.to_string());
        cur = s.source();
    }
    out
}
