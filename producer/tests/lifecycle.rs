//! Start and shutdown: the broker lists the producer while it runs and
//! forgets it after `shutdown()`; shut-down producers refuse sends; callback
//! sends accepted before `shutdown()` are all sent.

use std::time::Duration;

use rmq_producer::{Error, Message, Producer};
use rmq_testkit::env::Env;
use rmq_testkit::wait::{LONG_TEST_TIMEOUT, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_lists_the_producer_until_shutdown() {
    within(LONG_TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("lifecycle", 1).await;
        let group = rmq_testkit::unique_name("pg");
        let p = Producer::builder()
            .group(group.clone())
            .namesrv_addr(env.broker.namesrv_addr.clone())
            .start()
            .await
            .expect("start");
        p.send(Message::new(&topic, "x")).await.expect("send");
        let client_id = p.client_id().to_owned();

        // Another client asks the broker about the group.
        let observer = env.producer().await;
        let addr = &env.broker.broker_addr;
        // The heartbeat that registers the producer goes out in the
        // background once its first route is known; the broker gives no
        // event for it, so poll (bounded).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let listed = observer
                .client_instance()
                .expect("a remoting producer")
                .get_producer_connection_list(addr, &group)
                .await;
            match listed {
                Ok(listed) if listed.contains_client(&client_id) => break,
                other => assert!(
                    tokio::time::Instant::now() < deadline,
                    "{client_id} never listed by the broker: {other:?}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        // The same group cannot be started twice in one client instance,
        // but a second producer of it gets its own instance (instance name
        // = pid#nanos), as in Java.
        let twin = Producer::builder()
            .group(group.clone())
            .namesrv_addr(env.broker.namesrv_addr.clone())
            .start()
            .await
            .expect("second producer of the group");
        assert_ne!(twin.client_id(), client_id);
        twin.shutdown().await.expect("producer shutdown");

        p.shutdown().await.expect("producer shutdown");
        p.shutdown().await.expect("idempotent shutdown");
        assert!(p.is_shutdown());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let gone = match observer
                .client_instance()
                .expect("a remoting producer")
                .get_producer_connection_list(addr, &group)
                .await
            {
                Ok(list) => !list.contains_client(&client_id),
                // "the producer group not exist": nobody left.
                Err(_) => true,
            };
            if gone {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the broker still lists {client_id} after shutdown"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }

        let e = p.send(Message::new(&topic, "late")).await.unwrap_err();
        assert!(
            matches!(
                e.downcast_ref::<Error>().map(Error::inner),
                Some(Error::Shutdown)
            ),
            "{e:?}"
        );
        assert_eq!(e.kind(), rmq_error::ErrorKind::Shutdown);
        let (tx, rx) = tokio::sync::oneshot::channel();
        p.send_with_callback(Message::new(&topic, "late"), move |r| {
            let _ = tx.send(r.is_err());
        });
        assert!(rx.await.expect("callback"));
        observer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

/// Callback sends accepted before `shutdown()` are sent, even when their
/// tasks first run after it began: on a current-thread runtime none of the
/// spawned sends has run when `shutdown` is called right after them.
#[tokio::test(flavor = "current_thread")]
async fn callback_sends_accepted_before_shutdown_are_all_sent() {
    within(LONG_TEST_TIMEOUT, async {
        const N: usize = 200;
        let env = Env::new().await;
        let topic = env.topic("shutdown_callbacks", 4).await;
        let p = Producer::builder()
            .group(rmq_testkit::unique_name("pg"))
            .namesrv_addr(env.broker.namesrv_addr.clone())
            .start()
            .await
            .expect("start");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for i in 0..N {
            let tx = tx.clone();
            p.send_with_callback(Message::new(&topic, i.to_string()), move |r| {
                let _ = tx.send(r.map(|sent| sent.msg_id).map_err(|e| e.to_string()));
            });
        }
        drop(tx);
        p.shutdown().await.expect("producer shutdown");
        let mut ids = std::collections::BTreeSet::new();
        while let Some(r) = rx.recv().await {
            match r {
                Ok(id) => assert!(ids.insert(id), "one answer per send"),
                Err(e) => panic!("a send accepted before shutdown failed: {e}"),
            }
        }
        assert_eq!(ids.len(), N, "every accepted send was answered once");
    })
    .await;
}
