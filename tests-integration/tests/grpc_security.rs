//! The 5.x proxy with ACL 2.0 and TLS: the secured instance of `rmq_testkit::secure` runs a
//! proxy that authenticates every gRPC call (users and ACLs of the broker) and speaks TLS only
//! (its server certificate, signed by the instance's CA). The producer and the simple consumer
//! built with `.endpoint(..)` take the credentials and the TLS settings of their client
//! configuration, as they do towards brokers.
//!
//! 4.9.x has no proxy: these tests are `#[ignore]`d, and `scripts/test.sh` runs them in its gRPC
//! step on 5.x (they start, or reuse, the secured instance themselves).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmq_client_core::{ClientConfig, Credentials};
use rmq_consumer_pull::SimpleConsumer;
use rmq_consumer_push::{ConsumeResult, PushConsumer, listener_fn};
use rmq_producer::{Message, Producer};
use rmq_remoting::TlsConfig;
use rmq_testkit::client::within;
use rmq_testkit::grpc::receive_ids;
use rmq_testkit::secure::{SecureBroker, secure_broker};
use rmq_testkit::unique_name;

/// Upper bound of one test (the first may start the secured instance: four JVMs).
const LIMIT: u64 = 400;
/// How soon a refused start must fail: the proxy answers at once, the client gives up after
/// its attempts (3 s request timeout each).
const REFUSED_WITHIN: Duration = Duration::from_secs(15);

/// The whole cause chain of an error, for assertions on what it names.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(" | ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The secured instance and its proxy endpoint.
async fn secured_proxy() -> (&'static SecureBroker, String) {
    let sec = secure_broker().await;
    let endpoint = sec.proxy_endpoint.clone().unwrap_or_else(|| {
        panic!(
            "the secured RocketMQ {} runs no proxy (5.x has one; on 4.9.x these tests do not apply)",
            sec.version
        )
    });
    (sec, endpoint)
}

fn producer_builder(endpoint: &str, config: ClientConfig) -> rmq_producer::ProducerBuilder {
    Producer::builder()
        .group(unique_name("gsec_pg"))
        .endpoint(endpoint)
        .client_config(config)
}

/// Starts a producer with `config` and sends one message: the first error, if any.
async fn start_and_send(endpoint: &str, config: ClientConfig, topic: &str) -> rmq_error::Error {
    match producer_builder(endpoint, config).start().await {
        Err(e) => e,
        Ok(p) => {
            let sent = p.send(Message::new(topic, "refused?")).await;
            let _ = p.shutdown().await;
            match sent {
                Err(e) => e,
                Ok(r) => panic!("the proxy took a send it should refuse: {}", r.msg_id),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy of the secured instance: scripts/test.sh runs it on 5.x"]
async fn signed_tls_producer_and_simple_consumer_round_trip() {
    within(LIMIT, "signed TLS round trip through the proxy", async {
        let (sec, endpoint) = secured_proxy().await;
        let topic = unique_name("GrpcSecure");
        sec.create_typed_topic(&topic, 4, "NORMAL").await;
        let producer = producer_builder(&endpoint, sec.user_config())
            .start()
            .await
            .unwrap_or_else(|e| panic!("signed TLS producer starts: {}", chain(&e)));
        let mut ids = Vec::new();
        for i in 0..5 {
            let m = Message::new(&topic, format!("secure body {i}"))
                .with_tags("sec")
                .with_keys([format!("k{i}")]);
            let r = producer
                .send(m)
                .await
                .unwrap_or_else(|e| panic!("signed send {i}: {}", chain(&e)));
            ids.push(r.msg_id);
        }
        producer.shutdown().await.expect("producer shutdown");

        let consumer = SimpleConsumer::builder()
            .group(unique_name("gsec_cg"))
            .endpoint(&endpoint)
            .client_config(sec.user_config())
            .subscribe(&topic, "sec")
            .await_duration(Duration::from_secs(5))
            .start()
            .await
            .unwrap_or_else(|e| panic!("signed TLS simple consumer starts: {}", chain(&e)));
        let got = receive_ids(&consumer, &ids, 60).await;
        let bodies: HashSet<String> = got
            .values()
            .map(|m| String::from_utf8_lossy(&m.message().message.body).into_owned())
            .collect();
        assert_eq!(got.len(), ids.len());
        for i in 0..5 {
            assert!(bodies.contains(&format!("secure body {i}")), "{bodies:?}");
        }
        consumer.shutdown().await.expect("consumer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy of the secured instance: scripts/test.sh runs it on 5.x"]
async fn signed_tls_push_consumer_receives() {
    within(LIMIT, "signed TLS push consumer through the proxy", async {
        let (sec, endpoint) = secured_proxy().await;
        let topic = unique_name("GrpcSecurePush");
        sec.create_typed_topic(&topic, 4, "NORMAL").await;
        let got: Arc<Mutex<HashSet<String>>> = Arc::default();
        let notify = Arc::new(tokio::sync::Notify::new());
        let (g, n) = (got.clone(), notify.clone());
        let consumer = PushConsumer::builder()
            .group(unique_name("gsec_push"))
            .endpoint(&endpoint)
            .client_config(sec.user_config())
            .subscribe(&topic, "*")
            .start(listener_fn(move |msgs, _ctx| {
                let (g, n) = (g.clone(), n.clone());
                let ids: Vec<String> = msgs.iter().map(|m| m.msg_id.clone()).collect();
                Box::pin(async move {
                    if let Ok(mut seen) = g.lock() {
                        seen.extend(ids);
                    }
                    n.notify_waiters();
                    ConsumeResult::Success
                })
            }))
            .await
            .unwrap_or_else(|e| panic!("signed TLS push consumer starts: {}", chain(&e)));
        let producer = producer_builder(&endpoint, sec.user_config())
            .start()
            .await
            .unwrap_or_else(|e| panic!("signed TLS producer starts: {}", chain(&e)));
        let mut ids = HashSet::new();
        for i in 0..5 {
            let r = producer
                .send(Message::new(&topic, format!("push body {i}")))
                .await
                .unwrap_or_else(|e| panic!("signed send {i}: {}", chain(&e)));
            ids.insert(r.msg_id);
        }
        producer.shutdown().await.expect("producer shutdown");
        loop {
            let wait = notify.notified();
            let missing = got.lock().map(|seen| !ids.is_subset(&seen)).unwrap_or(true);
            if !missing {
                break;
            }
            wait.await;
        }
        consumer.shutdown().await.expect("consumer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy of the secured instance: scripts/test.sh runs it on 5.x"]
async fn wrong_secret_is_a_typed_auth_error() {
    within(LIMIT, "wrong secret through the proxy", async {
        let (sec, endpoint) = secured_proxy().await;
        let topic = unique_name("GrpcSecureWrong");
        sec.create_typed_topic(&topic, 4, "NORMAL").await;
        let wrong = Credentials::new(sec.user.access_key(), "not-the-secret");
        let config = sec
            .config_builder(Some(&wrong))
            .build()
            .expect("client config");
        let started = Instant::now();
        let e = start_and_send(&endpoint, config, &topic).await;
        println!("wrong secret: {}", chain(&e));
        assert!(
            e.is_auth(),
            "a wrong secret is an auth error, got: {}",
            chain(&e)
        );
        assert!(!e.is_retryable(), "{}", chain(&e));
        assert_eq!(e.kind(), rmq_error::ErrorKind::Auth, "{}", chain(&e));
        assert!(
            started.elapsed() < REFUSED_WITHIN,
            "refused after {:?}",
            started.elapsed()
        );

        let unknown = Credentials::new("no-such-user", "whatever");
        let config = sec
            .config_builder(Some(&unknown))
            .build()
            .expect("client config");
        let refused = SimpleConsumer::builder()
            .group(unique_name("gsec_cg"))
            .endpoint(&endpoint)
            .client_config(config)
            .subscribe(&topic, "*")
            .start()
            .await;
        let e = match refused {
            Err(e) => e,
            Ok(c) => {
                let r = c.receive(1, Duration::from_secs(10)).await;
                let _ = c.shutdown().await;
                r.expect_err("an unknown user's receive is refused")
            }
        };
        assert!(
            e.is_auth(),
            "an unknown user is an auth error, got: {}",
            chain(&e)
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy of the secured instance: scripts/test.sh runs it on 5.x"]
async fn untrusted_proxy_certificate_and_plaintext_are_refused() {
    within(
        LIMIT,
        "untrusted certificate and plaintext towards the proxy",
        async {
            let (sec, endpoint) = secured_proxy().await;
            let topic = unique_name("GrpcSecureTls");
            sec.create_typed_topic(&topic, 4, "NORMAL").await;

            let other_ca = TlsConfig::new()
                .with_ca_file(&sec.other_ca)
                .with_client_cert(&sec.client_cert, &sec.client_key);
            let config = ClientConfig::builder()
                .with_credentials(sec.user.clone())
                .tls(other_ca)
                .build()
                .expect("client config");
            let started = Instant::now();
            let e = start_and_send(&endpoint, config, &topic).await;
            let text = chain(&e);
            println!("untrusted proxy certificate: {text}");
            assert!(
                text.to_lowercase().contains("certificate"),
                "a proxy certificate from an untrusted CA is named as such: {text}"
            );
            assert!(!e.is_auth(), "{text}");
            assert!(
                started.elapsed() < REFUSED_WITHIN,
                "{:?}",
                started.elapsed()
            );

            // The proxy speaks TLS only: a plaintext client fails, it does not hang.
            let config = ClientConfig::builder()
                .with_credentials(sec.user.clone())
                .build()
                .expect("client config");
            let started = Instant::now();
            let e = start_and_send(&endpoint, config, &topic).await;
            println!("plaintext towards the TLS proxy: {}", chain(&e));
            assert!(
                started.elapsed() < REFUSED_WITHIN,
                "{:?}",
                started.elapsed()
            );
        },
    )
    .await;
}
