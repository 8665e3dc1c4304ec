//! The proxy restarted mid-run (`scripts/rocketmq-local.sh restart-proxy`):
//! the gRPC producer, simple consumer and push consumer recover (telemetry
//! reopened, calls retried, receive loops going on) and nothing is lost. A
//! binary of its own: the restart must not hit the other gRPC tests. One
//! test and one restart (a proxy start takes about 30 s) under all three
//! clients. 5.x only (`#[ignore]`d; `scripts/test.sh` runs it with the
//! proxy, with the instance's environment).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmq_consumer_pull::SimpleConsumer;
use rmq_consumer_push::{ConsumeResult, ConsumerState, PushConsumer, listener_fn};
use rmq_producer::{Message, Producer};
use rmq_testkit::client::within;
use rmq_testkit::grpc::{INVISIBLE, endpoint, typed_topic};
use rmq_testkit::unique_name;

const N: usize = 20;

async fn restart_proxy() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/rocketmq-local.sh");
    let status = tokio::process::Command::new("bash")
        .arg(script)
        .arg("restart-proxy")
        .env("RMQ_VERSION", "5")
        .status()
        .await
        .expect("restart-proxy runs");
    assert!(status.success(), "restart-proxy failed: {status}");
}

/// Sends until the proxy takes it (it is down for a while).
async fn send_until_taken(producer: &Producer, m: Message) -> String {
    loop {
        match producer.send(m.clone()).await {
            Ok(r) => return r.msg_id,
            Err(e) => {
                println!("send failed (proxy restarting?): {e}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn producer_simple_and_push_consumers_recover_from_a_proxy_restart() {
    within(300, "proxy restart", async {
        let topic = typed_topic("GrpcRestart", "NORMAL").await;
        let push_topic = typed_topic("GrpcRestartPush", "NORMAL").await;
        let producer = Producer::builder()
            .group(unique_name("grpc_restart_p"))
            .endpoint(endpoint())
            .start()
            .await
            .expect("producer starts");
        let consumer = SimpleConsumer::builder()
            .group(unique_name("grpc_restart_c"))
            .endpoint(endpoint())
            .subscribe(&topic, "*")
            .await_duration(Duration::from_secs(5))
            .start()
            .await
            .expect("consumer starts");
        let got_push: Arc<Mutex<HashSet<String>>> = Arc::default();
        let changed = Arc::new(tokio::sync::Notify::new());
        let (g, c) = (got_push.clone(), changed.clone());
        let push = PushConsumer::builder()
            .group(unique_name("grpc_restart_push"))
            .endpoint(endpoint())
            .subscribe(&push_topic, "*")
            .start(listener_fn(move |msgs, _ctx| {
                let (g, c) = (g.clone(), c.clone());
                Box::pin(async move {
                    let mut g = g.lock().expect("got lock");
                    for m in msgs {
                        g.insert(m.msg_id.clone());
                    }
                    c.notify_one();
                    ConsumeResult::Success
                })
            }))
            .await
            .expect("push consumer starts");
        let all_pushed =
            |sent: &HashSet<String>| sent.is_subset(&got_push.lock().expect("got lock"));

        let mut sent = HashSet::new();
        let mut sent_push = HashSet::new();
        for i in 0..N / 2 {
            sent.insert(
                send_until_taken(&producer, Message::new(&topic, format!("before {i}"))).await,
            );
            let m = Message::new(&push_topic, format!("before {i}"));
            sent_push.insert(send_until_taken(&producer, m).await);
        }
        // The simple consumer receives some before the restart, the rest after it; the push
        // consumer everything sent before it.
        let mut got = HashSet::new();
        for m in consumer.receive(4, INVISIBLE).await.expect("receive") {
            consumer.ack(&m).await.expect("ack");
            got.insert(m.msg_id.clone());
        }
        while !all_pushed(&sent_push) {
            changed.notified().await;
        }

        restart_proxy().await;

        for i in N / 2..N {
            sent.insert(
                send_until_taken(&producer, Message::new(&topic, format!("after {i}"))).await,
            );
            let m = Message::new(&push_topic, format!("after {i}"));
            sent_push.insert(send_until_taken(&producer, m).await);
        }
        let restarted = tokio::time::Instant::now();
        let deadline = restarted + Duration::from_secs(120);
        while !sent.is_subset(&got) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "received {} of {} after the restart",
                got.intersection(&sent).count(),
                sent.len()
            );
            let batch = match consumer.receive(32, INVISIBLE).await {
                Ok(b) => b,
                Err(e) => {
                    println!("receive failed (proxy restarting?): {e}");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            };
            for m in batch {
                // An ack lost in the restart: the message comes back.
                if consumer.ack(&m).await.is_ok() {
                    got.insert(m.msg_id.clone());
                }
            }
        }
        assert_eq!(sent.len(), N);
        while !all_pushed(&sent_push) {
            changed.notified().await;
        }
        println!(
            "every message consumed {:?} after the proxy was back",
            restarted.elapsed()
        );
        assert_eq!(sent_push.len(), N);
        assert_eq!(push.state(), ConsumerState::Running);
        push.shutdown().await.expect("push shutdown");
        consumer.shutdown().await.expect("shutdown");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}
