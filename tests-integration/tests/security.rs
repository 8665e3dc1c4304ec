//! ACL signing and TLS against the real secured broker (both lines: ACL 2.0 on 5.x, ACL 1.0 on
//! 4.9.x): one secured instance per process (`rmq_testkit::secure`: ACL, TLS enforcing on the
//! name server and the broker, client certificates required), shared by every test here.
//!
//! Every client below speaks TLS with the client certificate unless a test says otherwise, and
//! signs as the normal user unless a test says otherwise.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmq_client_core::{ClientConfig, ClientInstance, Credentials};
use rmq_consumer_pull::{ConsumeFrom as PullFrom, LitePullConsumer, PullConsumer};
use rmq_consumer_push::{
    ConsumeFrom, ConsumeResult, OrderlyResult, PushConsumer, listener_fn, orderly_listener_fn,
};
use rmq_producer::{Message, Producer, UnsentExt};
use rmq_protocol::header::GetRouteInfoRequestHeader;
use rmq_protocol::{MessageQueue, RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::{ClientOptions, RemotingClient, TlsConfig};
use rmq_testkit::secure::{SecureBroker, secure_broker};
use rmq_testkit::unique_name;
use rmq_tests_integration::within;
use tokio::sync::Notify;

/// Upper bound of one test (the first one may start the secured broker: Maven, two JVMs).
const LIMIT: Duration = Duration::from_secs(300);
/// How soon a refused call must fail.
const AUTH_FAIL_WITHIN: Duration = Duration::from_secs(1);

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

async fn producer(config: ClientConfig) -> Producer {
    Producer::builder()
        .group(unique_name("sec_pg"))
        .client_config(config)
        .start()
        .await
        .expect("producer starts")
}

async fn send_n(sec: &SecureBroker, topic: &str, n: usize) {
    let p = producer(sec.user_config()).await;
    for i in 0..n {
        p.send(Message::new(topic, format!("m{i}")).with_tags("t"))
            .await
            .unwrap_or_else(|e| panic!("signed send {i}: {}", chain(&e)));
    }
    p.shutdown().await.expect("producer shutdown");
}

/// A plain remoting request any server answers: the route of a topic (name server) or a
/// runtime-info request (broker).
fn route_request(topic: &str) -> RemotingCommand {
    RemotingCommand::request(
        RequestCode::GET_ROUTEINFO_BY_TOPIC,
        &GetRouteInfoRequestHeader::new(topic),
    )
}

fn tls_client(tls: TlsConfig) -> RemotingClient {
    RemotingClient::new(
        ClientOptions::default().with_tls(tls.connector().expect("TLS settings load")),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_producer_and_push_consumer_with_send_back_and_retry() {
    within(LIMIT, async {
        let sec = secure_broker().await;
        let topic = unique_name("sec_push");
        sec.create_topic(&topic, 2).await;
        const N: usize = 10;
        send_n(sec, &topic, N).await;

        // m3 fails on its first delivery: CONSUMER_SEND_MSG_BACK (signed) moves it to
        // %RETRY%<group>, from where it comes back (the retry topic is pulled signed too).
        let seen = Arc::new(Mutex::new(Vec::<(String, i32)>::new()));
        let done = Arc::new(Notify::new());
        let group = unique_name("sec_push_cg");
        if sec.version.starts_with("4.") {
            // 4.9.x: the broker creates %RETRY%<group> at the first heartbeat and registers it
            // with the name server, which loses that registration when the other tests' topics
            // are created at the same moment (tests/auto_created_route.rs). Created as a
            // 4.9.x operator does, with `mqadmin updateTopic`.
            sec.create_topic(&format!("%RETRY%{group}"), 1).await;
        }
        let consumer = PushConsumer::builder()
            .group(group)
            .client_config(sec.user_config())
            .subscribe(&topic, "*")
            .consume_from(ConsumeFrom::FirstOffset)
            .start(listener_fn({
                let seen = seen.clone();
                let done = done.clone();
                move |msgs, _ctx| {
                    let seen = seen.clone();
                    let done = done.clone();
                    Box::pin(async move {
                        let mut result = ConsumeResult::Success;
                        let mut s = seen.lock().unwrap();
                        for m in msgs {
                            let body = String::from_utf8_lossy(&m.body).into_owned();
                            if body == "m3" && m.reconsume_times == 0 {
                                result = ConsumeResult::ReconsumeLater;
                            }
                            s.push((body, m.reconsume_times));
                        }
                        let ok: std::collections::BTreeSet<_> =
                            s.iter().map(|(b, _)| b.clone()).collect();
                        if ok.len() == N && s.iter().any(|(b, r)| b == "m3" && *r > 0) {
                            done.notify_one();
                        }
                        result
                    })
                }
            }))
            .await
            .expect("signed push consumer starts");
        tokio::time::timeout(Duration::from_secs(60), done.notified())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "not all consumed, or m3 not retried: {:?}",
                    seen.lock().unwrap()
                )
            });
        consumer.shutdown().await.expect("shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_orderly_consumer_locks_and_consumes_in_order() {
    within(LIMIT, async {
        let sec = secure_broker().await;
        let topic = unique_name("sec_orderly");
        sec.create_topic(&topic, 1).await;
        const N: usize = 10;
        send_n(sec, &topic, N).await;
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let done = Arc::new(Notify::new());
        let consumer = PushConsumer::builder()
            .group(unique_name("sec_orderly_cg"))
            .client_config(sec.user_config())
            .subscribe(&topic, "*")
            .consume_from(ConsumeFrom::FirstOffset)
            .start_orderly(orderly_listener_fn({
                let seen = seen.clone();
                let done = done.clone();
                move |msgs, _ctx| {
                    let seen = seen.clone();
                    let done = done.clone();
                    Box::pin(async move {
                        let mut s = seen.lock().unwrap();
                        s.extend(
                            msgs.iter()
                                .map(|m| String::from_utf8_lossy(&m.body).into_owned()),
                        );
                        if s.len() >= N {
                            done.notify_one();
                        }
                        OrderlyResult::Success
                    })
                }
            }))
            .await
            .expect("signed orderly consumer starts");
        tokio::time::timeout(Duration::from_secs(60), done.notified())
            .await
            .unwrap_or_else(|_| panic!("orderly consumer saw {:?}", seen.lock().unwrap()));
        let expected: Vec<String> = (0..N).map(|i| format!("m{i}")).collect();
        assert_eq!(*seen.lock().unwrap(), expected, "in queue order, once each");
        consumer.shutdown().await.expect("shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_lite_pull_consumer_polls() {
    within(LIMIT, async {
        let sec = secure_broker().await;
        let topic = unique_name("sec_lite");
        sec.create_topic(&topic, 2).await;
        const N: usize = 10;
        send_n(sec, &topic, N).await;
        let c = LitePullConsumer::builder()
            .group(unique_name("sec_lite_cg"))
            .client_config(sec.user_config())
            .consume_from(PullFrom::FirstOffset)
            .start()
            .await
            .expect("signed lite consumer starts");
        c.subscribe(&topic, "*").await.expect("subscribe");
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut got = 0;
        while got < N {
            assert!(Instant::now() < deadline, "only {got} of {N} polled");
            got += c
                .poll(Duration::from_millis(500))
                .await
                .expect("poll")
                .len();
        }
        c.commit().await.expect("signed commit");
        c.shutdown().await.expect("shutdown");
    })
    .await;
}

/// A send refused for its credentials: typed, within a second, not retried, message handed back.
async fn assert_send_refused(sec: &SecureBroker, credentials: Credentials, why: &str) {
    let topic = unique_name("sec_refused");
    sec.create_topic(&topic, 1).await;
    let config = sec
        .config_builder(Some(&credentials))
        .build()
        .expect("config");
    let p = producer(config).await;
    // Route and connections first (the name server has no ACL), so the timing below is the
    // refused call itself.
    p.client_instance()
        .expect("a remoting producer")
        .route(&topic)
        .await
        .expect("route over TLS");
    let msg = Message::new(&topic, "refused").with_keys(["k1"]);
    let started = Instant::now();
    let e = p.send(msg).await.expect_err("the broker refuses the send");
    let elapsed = started.elapsed();
    let text = chain(&e);
    assert!(e.is_auth(), "{why}: not an auth error: {text}");
    assert!(
        !e.is_retryable(),
        "{why}: auth errors are not retryable: {text}"
    );
    assert!(
        elapsed < AUTH_FAIL_WITHIN,
        "{why}: refused after {elapsed:?}: {text}"
    );
    assert!(
        text.contains(credentials.access_key()),
        "{why}: access key not named: {text}"
    );
    assert!(
        text.contains(&sec.broker_addr),
        "{why}: broker not named: {text}"
    );
    assert!(
        text.contains("SEND_MESSAGE"),
        "{why}: request not named: {text}"
    );
    assert!(text.contains("(1 attempt)"), "{why}: retried: {text}");
    let back = e.into_message().expect("the message is handed back");
    assert_eq!(&back.body[..], b"refused");
    assert_eq!(back.topic, topic);
    p.shutdown().await.expect("producer shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_secret_is_a_typed_auth_error_within_a_second() {
    within(LIMIT, async {
        let sec = secure_broker().await;
        let wrong = Credentials::new(sec.user.access_key(), "not-the-secret");
        assert_send_refused(sec, wrong, "wrong secret").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_access_key_is_a_typed_auth_error_within_a_second() {
    within(LIMIT, async {
        let sec = secure_broker().await;
        let unknown = Credentials::new("nobody-at-all", "whatever-secret");
        assert_send_refused(sec, unknown, "unknown access key").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsigned_requests_are_refused_with_a_typed_error() {
    within(LIMIT, async {
        let sec = secure_broker().await;
        let topic = unique_name("sec_unsigned");
        sec.create_topic(&topic, 1).await;
        let p = producer(sec.config_builder(None).build().expect("config")).await;
        let e = p
            .send(Message::new(&topic, "x"))
            .await
            .expect_err("refused");
        assert!(e.is_auth(), "{}", chain(&e));
        assert!(
            chain(&e).contains("no credentials configured"),
            "{}",
            chain(&e)
        );
        p.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_without_sub_gets_not_authorized_naming_topic_and_group() {
    within(LIMIT, async {
        let sec = secure_broker().await;
        let topic = sec.deny_topic.clone();
        sec.create_topic(&topic, 1).await;
        // The user may publish there...
        let p = producer(sec.user_config()).await;
        p.send(Message::new(&topic, "pub allowed"))
            .await
            .unwrap_or_else(|e| panic!("Pub is allowed: {}", chain(&e)));
        p.shutdown().await.expect("producer shutdown");
        // ...but not pull.
        let group = unique_name("sec_nosub_cg");
        let c = PullConsumer::builder()
            .group(&group)
            .client_config(sec.user_config())
            .start()
            .await
            .expect("pull consumer starts");
        let mq = MessageQueue::new(&topic, "broker-a", 0);
        let started = Instant::now();
        let e = c.pull(&mq, "*", 0, 8).await.expect_err("Sub is denied");
        let text = chain(&e);
        assert!(started.elapsed() < AUTH_FAIL_WITHIN, "{text}");
        assert!(e.is_auth(), "not an auth error: {text}");
        assert!(text.contains("not authorized"), "{text}");
        assert!(text.contains(&topic), "topic not named: {text}");
        assert!(text.contains(&group), "group not named: {text}");
        assert!(
            text.contains(sec.user.access_key()),
            "access key not named: {text}"
        );
        c.shutdown().await.expect("shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enforcing_tls_refuses_plaintext_and_serves_tls() {
    within(LIMIT, async {
        let sec = secure_broker().await;
        let plain = RemotingClient::new(ClientOptions::default());
        for addr in [&sec.namesrv_addr, &sec.broker_addr] {
            let r = plain
                .invoke(addr, route_request("TBW102"), Duration::from_secs(3))
                .await;
            let e = r.expect_err("a plaintext request to an enforcing TLS server fails");
            assert!(
                e.is_connection_closed(),
                "{addr}: expected the server to close the plaintext connection: {}",
                chain(&e)
            );
        }
        plain.shutdown().await;

        let tls = tls_client(sec.tls());
        let r = tls
            .invoke(
                &sec.namesrv_addr,
                route_request("TBW102"),
                Duration::from_secs(3),
            )
            .await
            .unwrap_or_else(|e| panic!("TLS request: {}", chain(&e)));
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
        tls.shutdown().await;

        // The same through a client instance: routes (name server) and a signed broker call.
        let instance = ClientInstance::get_or_start(sec.user_config()).expect("instance");
        let topic = unique_name("sec_tls");
        sec.create_topic(&topic, 1).await;
        instance.route(&topic).await.expect("route over TLS");
        let max = instance
            .get_max_offset(&sec.broker_addr, &topic, 0, None)
            .await
            .unwrap_or_else(|e| panic!("signed broker call over TLS: {}", chain(&e)));
        assert_eq!(max, 0);
        instance.release().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_is_a_certificate_error_naming_the_address() {
    within(LIMIT, async {
        let sec = secure_broker().await;
        let client = tls_client(
            TlsConfig::new()
                .with_ca_file(&sec.other_ca)
                .with_client_cert(&sec.client_cert, &sec.client_key),
        );
        for addr in [&sec.namesrv_addr, &sec.broker_addr] {
            let e = client
                .invoke(addr, route_request("TBW102"), Duration::from_secs(3))
                .await
                .expect_err("an untrusted server certificate fails the handshake");
            let text = chain(&e);
            assert!(e.is_certificate_error(), "{addr}: {text}");
            assert!(text.contains(addr.as_str()), "address not named: {text}");
            assert!(text.contains("certificate"), "{text}");
        }
        client.shutdown().await;
        // Through the producer as well: its start asks the name server (fail-fast) and fails
        // with the handshake's error; without fail-fast, its first send does.
        let config = ClientConfig::builder()
            .namesrv_addr(&sec.namesrv_addr)
            .instance_name(unique_name("sec_wrong_ca"))
            .with_credentials(sec.user.clone())
            .tls(TlsConfig::new().with_ca_file(&sec.other_ca))
            .build()
            .expect("config");
        let e = Producer::builder()
            .group(unique_name("sec_pg"))
            .client_config(config.clone())
            .start()
            .await
            .expect_err("no start without a trusted name server");
        let text = chain(&e);
        assert!(
            text.contains(&sec.namesrv_addr) && text.contains("certificate"),
            "{text}"
        );
        let p = Producer::builder()
            .group(unique_name("sec_pg"))
            .client_config(config)
            .fail_fast(false)
            .start()
            .await
            .expect("fail_fast(false): the producer starts");
        let e = p
            .send(Message::new(unique_name("sec_wrong_ca"), "x"))
            .await
            .expect_err("no route without a trusted name server");
        let text = chain(&e);
        assert!(
            text.contains(&sec.namesrv_addr) && text.contains("certificate"),
            "{text}"
        );
        p.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mtls_works_with_the_client_certificate_and_fails_without() {
    within(LIMIT, async {
        let sec = secure_broker().await;
        let with = tls_client(sec.tls());
        let without = tls_client(TlsConfig::new().with_ca_file(&sec.ca));
        for addr in [&sec.namesrv_addr, &sec.broker_addr] {
            with.invoke(addr, route_request("TBW102"), Duration::from_secs(3))
                .await
                .unwrap_or_else(|e| panic!("{addr} with the client certificate: {}", chain(&e)));
            let e = without
                .invoke(addr, route_request("TBW102"), Duration::from_secs(3))
                .await
                .expect_err("no client certificate: refused");
            assert!(
                e.is_certificate_error(),
                "{addr}: expected a certificate refusal: {}",
                chain(&e)
            );
        }
        with.shutdown().await;
        without.shutdown().await;
    })
    .await;
}

/// Captures what every client of this process logs (a global subscriber: events of tasks on any
/// thread, from every test running beside).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn capture_logs() -> Captured {
    static CAPTURED: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();
    CAPTURED
        .get_or_init(|| {
            let captured = Captured::default();
            let subscriber = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_ansi(false)
                .with_writer({
                    let c = captured.clone();
                    move || c.clone()
                })
                .finish();
            tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
            captured
        })
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_reach_logs_or_debug() {
    let captured = capture_logs();
    let sec = secure_broker().await;
    within(LIMIT, async {
        let topic = unique_name("sec_logs");
        sec.create_topic(&topic, 1).await;
        let wrong_secret = "wrong-secret-for-logs";
        let good = sec.user_config();
        let bad = sec
            .config_builder(Some(&Credentials::new(sec.user.access_key(), wrong_secret)))
            .build()
            .expect("config");
        let debug = format!("{good:?} {bad:?}");
        let p = producer(good).await;
        p.send(Message::new(&topic, "ok"))
            .await
            .expect("signed send");
        p.shutdown().await.expect("producer shutdown");
        let p = producer(bad).await;
        let e = p
            .send(Message::new(&topic, "no"))
            .await
            .expect_err("refused");
        let text = format!("{e} {e:?} {debug}");
        p.shutdown().await.expect("producer shutdown");
        let logs = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
        assert!(logs.contains("connected"), "nothing captured: {logs}");
        assert!(text.contains(sec.user.access_key()), "{text}");
        for secret in [wrong_secret, secret_of(&sec.user)] {
            assert!(!logs.contains(secret), "a secret key is in the logs");
            assert!(
                !text.contains(secret),
                "a secret key is in an error or Debug output"
            );
        }
    })
    .await;
}

/// The secret key, read the only way there is: from the script's export line (never from
/// `Credentials`, which does not expose it).
fn secret_of(_user: &Credentials) -> &'static str {
    "rmq-user-secret"
}

/// A push consumer without Sub on its topic: the broker refuses its heartbeat (ACL 2.0 and 1.0
/// check Sub on every subscribed topic), so it is never assigned a queue and sends no pull; the
/// refusal is logged at warn with the typed error (the access key, HEART_BEAT), not in a loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_consumer_without_sub_is_refused_at_its_heartbeat_without_a_storm() {
    let captured = capture_logs();
    within(LIMIT, async {
        let sec = secure_broker().await;
        let topic = sec.deny_topic.clone();
        sec.create_topic(&topic, 1).await;
        let group = unique_name("sec_backoff_cg");
        let consumer = PushConsumer::builder()
            .group(&group)
            .client_config(sec.user_config())
            .subscribe(&topic, "*")
            .pull_delay_when_exception(Duration::from_millis(100))
            .rebalance_interval(Duration::from_secs(1))
            .start(listener_fn(|_msgs, _ctx| {
                Box::pin(async { ConsumeResult::Success })
            }))
            .await
            .expect("the consumer starts (its heartbeats are refused)");
        let client_id = consumer.client_id().to_owned();
        let lines = |what: &str| {
            let logs = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
            logs.lines()
                .filter(|l| l.contains("WARN") && l.contains(what))
                .filter(|l| l.contains(&client_id) || l.contains(&group))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        let refused = loop {
            let found = lines("heartbeat failed");
            if let Some(l) = found.first() {
                break l.clone();
            }
            assert!(
                Instant::now() < deadline,
                "no refused heartbeat logged within 60 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(
            refused.contains("HEART_BEAT") && refused.contains(sec.user.access_key()),
            "{refused}"
        );
        // Three rebalance rounds later: still no pull, and the heartbeat not retried in a loop.
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(
            lines("pull refused").is_empty(),
            "{:?}",
            lines("pull refused")
        );
        // At most the heartbeats of the start, of the first route and of the periodic task's
        // first tick (1 s); the next one is 30 s later.
        assert!(
            lines("heartbeat failed").len() <= 4,
            "{:?}",
            lines("heartbeat failed")
        );
        consumer.shutdown().await.expect("shutdown");
    })
    .await;
}

/// A lite consumer assigned a queue it may not Sub (no subscription in its heartbeat, so it is
/// accepted): the refused pull reaches the application once, typed, naming topic and group, and
/// the queue backs off (`AUTH_FAILURE_BACKOFF`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lite_consumer_without_sub_reports_the_auth_error() {
    within(LIMIT, async {
        let sec = secure_broker().await;
        let topic = sec.deny_topic.clone();
        sec.create_topic(&topic, 1).await;
        let group = unique_name("sec_lite_nosub_cg");
        let c = LitePullConsumer::builder()
            .group(&group)
            .client_config(sec.user_config())
            .start()
            .await
            .expect("lite consumer starts");
        c.assign([MessageQueue::new(&topic, "broker-a", 0)])
            .await
            .expect("assign");
        let deadline = Instant::now() + Duration::from_secs(60);
        let e = loop {
            assert!(Instant::now() < deadline, "no error reported within 60 s");
            match c.poll(Duration::from_millis(500)).await {
                Err(e) => break e,
                Ok(msgs) => assert!(msgs.is_empty(), "messages from a topic without Sub"),
            }
        };
        let text = chain(&e);
        assert!(e.is_auth(), "{text}");
        assert!(text.contains(&topic) && text.contains(&group), "{text}");
        // Reported once: the next polls are quiet (the queue waits 10 s before pulling again).
        for _ in 0..3 {
            let more = c.poll(Duration::from_millis(300)).await;
            assert!(matches!(&more, Ok(m) if m.is_empty()), "{more:?}");
        }
        // Committing the queue's offset at shutdown may be refused too (4.9.x refuses
        // UPDATE_CONSUMER_OFFSET without Sub): typed as well.
        if let Err(e) = c.shutdown().await {
            assert!(e.is_auth(), "shutdown: {}", chain(&e));
        }
    })
    .await;
}

/// The server name checked defaults to the address's host (127.0.0.1 is in the certificate);
/// `with_server_name` replaces it (the certificate names `localhost`, not `broker.invalid`);
/// `danger_accept_invalid_certs` accepts a server no configured CA vouches for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_name_override_and_accepting_invalid_certificates() {
    within(LIMIT, async {
        let sec = secure_broker().await;
        let addr = &sec.broker_addr;
        let ask = |tls: TlsConfig| async move {
            let client = tls_client(tls);
            let r = client
                .invoke(addr, route_request("TBW102"), Duration::from_secs(3))
                .await;
            client.shutdown().await;
            r
        };
        ask(sec.tls().with_server_name("localhost"))
            .await
            .unwrap_or_else(|e| panic!("localhost is in the certificate: {}", chain(&e)));
        let e = ask(sec.tls().with_server_name("broker.invalid"))
            .await
            .expect_err("a name the certificate does not have");
        assert!(e.is_certificate_error(), "{}", chain(&e));
        ask(TlsConfig::new()
            .with_ca_file(&sec.other_ca)
            .with_client_cert(&sec.client_cert, &sec.client_key)
            .danger_accept_invalid_certs(true))
        .await
        .unwrap_or_else(|e| panic!("unverified TLS still connects: {}", chain(&e)));
    })
    .await;
}
