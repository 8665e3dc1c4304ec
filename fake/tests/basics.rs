//! The fake on its own, driven by rmq's clients: start, produce, consume,
//! long polling, retries with an advanced clock, faults, kill and restart.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmq::prelude::*;
use rmq_fake::{Action, FakeCluster, Fault};
use rmq_protocol::{RequestCode, ResponseCode};

const LIMIT: Duration = Duration::from_secs(60);

async fn within<F: std::future::Future>(what: &str, f: F) -> F::Output {
    match tokio::time::timeout(LIMIT, f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: not done within {LIMIT:?}"),
    }
}

async fn producer(cluster: &FakeCluster) -> Producer {
    Producer::builder()
        .group("basics_pg")
        .namesrv_addr(cluster.namesrv_addr())
        .start()
        .await
        .expect("producer starts")
}

#[derive(Default)]
struct Seen {
    ids: Vec<(String, i32, String)>,
}

fn recorder(
    seen: Arc<Mutex<Seen>>,
    fail_first: bool,
    changed: Arc<tokio::sync::Notify>,
) -> impl MessageListener {
    listener_fn(move |msgs, ctx| {
        let mut result = ConsumeResult::Success;
        {
            let mut s = seen.lock().unwrap();
            for m in msgs {
                s.ids.push((
                    m.msg_id.clone(),
                    m.reconsume_times,
                    ctx.queue().topic.clone(),
                ));
                if fail_first && m.reconsume_times == 0 {
                    result = ConsumeResult::ReconsumeLater;
                }
            }
        }
        changed.notify_waiters();
        Box::pin(async move { result })
    })
}

async fn wait_seen(
    seen: &Arc<Mutex<Seen>>,
    changed: &tokio::sync::Notify,
    pred: impl Fn(&Seen) -> bool,
) {
    within("deliveries", async {
        loop {
            let n = changed.notified();
            if pred(&seen.lock().unwrap()) {
                return;
            }
            let _ = tokio::time::timeout(Duration::from_millis(200), n).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_in_milliseconds_and_stops_on_drop() {
    let t = Instant::now();
    let cluster = FakeCluster::builder()
        .brokers(2)
        .queues(8)
        .start()
        .await
        .unwrap();
    let took = t.elapsed();
    assert!(took < Duration::from_millis(500), "started in {took:?}");
    let addr = cluster.namesrv_addr().to_owned();
    assert!(addr.starts_with("127.0.0.1:"));
    assert_eq!(cluster.brokers().len(), 2);
    drop(cluster);
    // The listener is gone soon after the drop.
    within("listener closed", async {
        loop {
            if tokio::net::TcpStream::connect(&addr).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_and_consume_with_auto_created_topic() {
    let cluster = FakeCluster::builder().brokers(2).start().await.unwrap();
    let p = producer(&cluster).await;
    let mut sent = HashSet::new();
    for i in 0..40 {
        let r = p
            .send(Message::new("auto_topic", format!("m{i}")).with_tags("t"))
            .await
            .expect("send");
        sent.insert(r.msg_id);
    }
    p.shutdown().await.expect("producer shutdown");
    // Auto-created with min(4 from the producer, 8 of TBW102) queues.
    for b in cluster.brokers() {
        if let Some(n) = b.queue_count("auto_topic") {
            assert_eq!(n, 4);
        }
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let changed = Arc::new(tokio::sync::Notify::new());
    let c = PushConsumer::builder()
        .group("basics_cg")
        .namesrv_addr(cluster.namesrv_addr())
        .consume_from(ConsumeFrom::FirstOffset)
        .subscribe("auto_topic", "*")
        .start(recorder(seen.clone(), false, changed.clone()))
        .await
        .expect("consumer starts");
    wait_seen(&seen, &changed, |s| s.ids.len() >= 40).await;
    c.shutdown().await.expect("shutdown");
    let got: HashSet<String> = seen
        .lock()
        .unwrap()
        .ids
        .iter()
        .map(|d| d.0.clone())
        .collect();
    assert_eq!(got, sent);
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_at_level_three_comes_back_when_the_clock_moves() {
    // Default delay levels: the first retry waits 10 s (level 3).
    let cluster = FakeCluster::builder()
        .topic_with_queues("retry_t", 2)
        .start()
        .await
        .unwrap();
    let p = producer(&cluster).await;
    let sent = p.send(Message::new("retry_t", "once")).await.unwrap();
    p.shutdown().await.expect("producer shutdown");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let changed = Arc::new(tokio::sync::Notify::new());
    let c = PushConsumer::builder()
        .group("retry_cg")
        .namesrv_addr(cluster.namesrv_addr())
        .consume_from(ConsumeFrom::FirstOffset)
        .subscribe("retry_t", "*")
        .start(recorder(seen.clone(), true, changed.clone()))
        .await
        .unwrap();
    wait_seen(&seen, &changed, |s| !s.ids.is_empty()).await;
    let broker = cluster.first_broker();
    within("the retry is scheduled", async {
        while broker.scheduled() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let t = Instant::now();
    cluster.clock().advance(Duration::from_secs(10));
    wait_seen(&seen, &changed, |s| s.ids.len() >= 2).await;
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    c.shutdown().await.unwrap();
    let s = seen.lock().unwrap();
    assert_eq!(s.ids[0], (sent.msg_id.clone(), 0, "retry_t".to_owned()));
    assert_eq!(s.ids[1].0, sent.msg_id);
    assert_eq!(s.ids[1].1, 1);
    assert_eq!(s.ids[1].2, "%RETRY%retry_cg");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_faults_are_answered_and_counted() {
    let cluster = FakeCluster::builder()
        .topic("busy_t")
        .start()
        .await
        .unwrap();
    let p = Producer::builder()
        .group("busy_pg")
        .namesrv_addr(cluster.namesrv_addr())
        .retry_times_when_send_failed(0)
        .start()
        .await
        .unwrap();
    cluster.add_fault(
        Fault::on(
            RequestCode::SEND_MESSAGE_V2,
            Action::error_with(ResponseCode::SYSTEM_BUSY, "injected"),
        )
        .times(1),
    );
    let err = p.send(Message::new("busy_t", "x")).await.expect_err("busy");
    assert_eq!(
        err.response_code(),
        Some(ResponseCode::SYSTEM_BUSY),
        "{err}"
    );
    // The rule ran out: the next send passes.
    p.send(Message::new("busy_t", "y"))
        .await
        .expect("second send");
    assert_eq!(cluster.request_count(RequestCode::SEND_MESSAGE_V2), 2);
    // Stored but not OK.
    cluster.add_fault(
        Fault::on(
            RequestCode::SEND_MESSAGE_V2,
            Action::stored_but_not_ok(ResponseCode::FLUSH_DISK_TIMEOUT),
        )
        .times(1),
    );
    let r = p.send(Message::new("busy_t", "z")).await.expect("stored");
    assert_eq!(r.status, SendStatus::FlushDiskTimeout);
    p.shutdown().await.expect("producer shutdown");
    let stored: usize = cluster.first_broker().messages("busy_t").len();
    assert_eq!(stored, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_broker_leaves_the_routes_and_comes_back() {
    let cluster = FakeCluster::builder()
        .brokers(2)
        .topic("kill_t")
        .start()
        .await
        .unwrap();
    let b = cluster.broker("broker-b").unwrap().clone();
    let addr = b.addr();
    b.kill().await.unwrap();
    assert!(!b.is_running().await);
    let p = producer(&cluster).await;
    for _ in 0..8 {
        let r = p.send(Message::new("kill_t", "x")).await.expect("send");
        assert_eq!(r.message_queue.broker_name, "broker-a");
    }
    b.restart().await.unwrap();
    assert_eq!(b.addr(), addr, "same address after restart");
    p.shutdown().await.expect("producer shutdown");
}
