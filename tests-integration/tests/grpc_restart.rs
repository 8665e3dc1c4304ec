//! The proxy restarted mid-run (`scripts/rocketmq-local.sh restart-proxy`):
//! the gRPC producer and simple consumer recover (telemetry reopened, calls
//! retried) and nothing is lost. A binary of its own: the restart must not
//! hit the other gRPC tests. 5.x only (`#[ignore]`d; `scripts/test.sh` runs
//! it with the proxy, with the instance's environment).

use std::collections::HashSet;
use std::time::Duration;

use rmq_consumer_pull::SimpleConsumer;
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
async fn producer_and_consumer_recover_from_a_proxy_restart() {
    within(300, "proxy restart", async {
        let topic = typed_topic("GrpcRestart", "NORMAL").await;
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

        let mut sent = HashSet::new();
        for i in 0..N / 2 {
            let m = Message::new(&topic, format!("before {i}"));
            sent.insert(send_until_taken(&producer, m).await);
        }
        // Receive some before the restart, the rest after it.
        let mut got = HashSet::new();
        for m in consumer.receive(4, INVISIBLE).await.expect("receive") {
            consumer.ack(&m).await.expect("ack");
            got.insert(m.msg_id.clone());
        }

        restart_proxy().await;

        for i in N / 2..N {
            let m = Message::new(&topic, format!("after {i}"));
            sent.insert(send_until_taken(&producer, m).await);
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
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
        consumer.shutdown().await.expect("shutdown");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}
