//! Transactional messages through the RocketMQ 5.x proxy
//! (`ProducerBuilder::endpoint` + `transaction_listener`): a committed half message is delivered,
//! a rolled-back one never, and one whose local transaction is unknown is checked back by the
//! proxy (`RecoverOrphanedTransactionCommand`), answered with `EndTransaction` and then
//! delivered. The proxy is `RMQ_PROXY_ENDPOINT`; 4.9.x has no proxy, so this is `#[ignore]`d and
//! `scripts/test.sh` runs it on 5.x.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmq_consumer_pull::SimpleConsumer;
use rmq_producer::{Message, MessageExt, Producer, TransactionState, transaction_fn};
use rmq_testkit::client::within;
use rmq_testkit::grpc::{INVISIBLE, endpoint, typed_topic};
use rmq_testkit::unique_name;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn commit_rollback_and_an_orphan_checked_back_through_the_proxy() {
    within(120, "gRPC transactions", async {
        let topic = typed_topic("GrpcTx", "TRANSACTION").await;
        let consumer = SimpleConsumer::builder()
            .group(unique_name("grpc_tx_cg"))
            .endpoint(endpoint())
            .subscribe(&topic, "*")
            .await_duration(Duration::from_secs(5))
            .start()
            .await
            .expect("gRPC simple consumer starts");

        // The local transaction answers by body; every check-back commits, so a lost rollback
        // or a lost commit would show up as a check of that message.
        let checked = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
        let producer = Producer::builder()
            .group(unique_name("grpc_tx"))
            .endpoint(endpoint())
            .transaction_listener(transaction_fn(
                |msg: &Message, ()| {
                    let state = match &msg.body[..] {
                        b"commit" => TransactionState::Commit,
                        b"rollback" => TransactionState::Rollback,
                        _ => TransactionState::Unknown,
                    };
                    Box::pin(async move { state })
                },
                {
                    let checked = checked.clone();
                    move |msg: &MessageExt| {
                        if let Ok(mut c) = checked.lock() {
                            c.push((
                                msg.msg_id.clone(),
                                String::from_utf8_lossy(&msg.body).into_owned(),
                            ));
                        }
                        Box::pin(async { TransactionState::Commit })
                    }
                },
            ))
            .topics([topic.clone()])
            .start()
            .await
            .expect("gRPC transactional producer starts");
        assert!(producer.producer().is_grpc());

        let mut sent = HashMap::new();
        for body in ["commit", "rollback", "unknown"] {
            let msg = Message::new(&topic, body).with_keys([format!("tx-{body}")]);
            let (result, state) = producer
                .send_in_transaction(msg, ())
                .await
                .unwrap_or_else(|e| panic!("half message {body}: {e}"));
            assert!(
                result
                    .transaction_id
                    .as_deref()
                    .is_some_and(|t| !t.is_empty()),
                "the proxy returned a transaction id for {body}"
            );
            sent.insert(body, (result.msg_id, state));
        }
        assert_eq!(sent["commit"].1, TransactionState::Commit);
        assert_eq!(sent["rollback"].1, TransactionState::Rollback);
        assert_eq!(sent["unknown"].1, TransactionState::Unknown);

        // The committed one, then the checked-back one arrive; the rolled-back one never does.
        let wanted: BTreeSet<String> = [&sent["commit"].0, &sent["unknown"].0]
            .into_iter()
            .cloned()
            .collect();
        let mut got: HashMap<String, MessageExt> = HashMap::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while !wanted.iter().all(|id| got.contains_key(id)) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "delivered within 60 s: {:?} of {wanted:?}",
                got.keys().collect::<Vec<_>>()
            );
            let batch = match consumer.receive(32, INVISIBLE).await {
                Ok(b) => b,
                Err(e) if e.is_retryable() => continue,
                Err(e) => panic!("receive: {e}"),
            };
            for m in batch {
                consumer.ack(&m).await.expect("ack");
                got.insert(m.msg_id.clone(), m.message().clone());
            }
        }
        assert!(
            !got.contains_key(&sent["rollback"].0),
            "the rolled-back message was delivered"
        );
        assert_eq!(got[&sent["commit"].0].body.as_ref(), b"commit");
        let orphan = &got[&sent["unknown"].0];
        assert_eq!(orphan.body.as_ref(), b"unknown");
        assert_eq!(orphan.keys().collect::<Vec<_>>(), ["tx-unknown"]);

        // Only the unknown one was checked back, with its id and body.
        let checked: BTreeSet<(String, String)> = checked
            .lock()
            .map(|c| c.iter().cloned().collect())
            .unwrap_or_default();
        assert_eq!(
            checked,
            BTreeSet::from([(sent["unknown"].0.clone(), "unknown".to_owned())]),
            "check-backs"
        );

        producer.shutdown().await.expect("producer shutdown");
        consumer.shutdown().await.expect("consumer shutdown");
    })
    .await;
}
