//! The send future stays small: tasks that spawn or await many sends hold
//! one each, and futures are moved by value when spawned.

use rmq_producer::{Message, Producer};

#[tokio::test]
async fn a_send_future_is_at_most_two_kib() {
    // Without fail-fast, starting needs no name server; nothing is sent.
    let p = Producer::builder()
        .group(rmq_testkit::unique_name("pg"))
        .namesrv_addr("127.0.0.1:1")
        .fail_fast(false)
        .start()
        .await
        .expect("start needs no name server");
    let send = p.send(Message::new("t", "x"));
    let size = std::mem::size_of_val(&send);
    drop(send);
    p.shutdown().await.expect("producer shutdown");
    assert!(size <= 2048, "the send future takes {size} bytes");
}
