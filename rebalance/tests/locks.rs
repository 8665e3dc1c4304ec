//! Queue locks against the real broker (rmq-testkit): two clients of one
//! group compete for a topic's queues.

use std::time::Duration;

use rmq_client_core::ClientInstance;
use rmq_protocol::MessageQueue;
use rmq_rebalance::QueueLocks;
use rmq_testkit::client::{create_topic, instance, within};

/// Two clients (A and B) of one new group, a new topic of `queues` queues
/// on the test broker, and each client's locks.
struct Pair {
    a: ClientInstance,
    b: ClientInstance,
    group: String,
    mqs: Vec<MessageQueue>,
    la: QueueLocks,
    lb: QueueLocks,
}

impl Pair {
    async fn new(prefix: &str, queues: i32) -> Self {
        let broker = rmq_testkit::broker().await;
        let a = instance(&format!("{prefix}_a")).await;
        let b = instance(&format!("{prefix}_b")).await;
        let topic = rmq_testkit::unique_name(prefix);
        create_topic(&a, &topic, queues).await;
        a.route(&topic).await.expect("route a");
        b.route(&topic).await.expect("route b");
        let group = rmq_testkit::unique_name(&format!("{prefix}_g"));
        let mqs: Vec<MessageQueue> = (0..queues)
            .map(|i| MessageQueue::new(topic.as_str(), broker.broker_name.as_str(), i))
            .collect();
        let la = QueueLocks::new(a.clone(), group.as_str());
        let lb = QueueLocks::new(b.clone(), group.as_str());
        Pair {
            a,
            b,
            group,
            mqs,
            la,
            lb,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_compete_for_queue_locks() {
    let run = async {
        let Pair {
            a,
            b,
            group,
            mqs,
            la,
            lb,
        } = Pair::new("lock", 4).await;

        // A takes everything; B gets nothing and tracks nothing.
        assert_eq!(la.lock(&mqs).await, mqs);
        assert!(mqs.iter().all(|mq| la.is_locked_and_fresh(mq)));
        assert!(lb.lock(&mqs).await.is_empty());
        assert!(lb.tracked().is_empty());
        assert!(!lb.is_locked_and_fresh(&mqs[0]));

        // Locking again is a renewal for the owner.
        let before = la.state(&mqs[0]).expect("tracked").last_lock;
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(la.renew_all().await, mqs);
        assert!(la.state(&mqs[0]).expect("tracked").last_lock > before);

        // A releases two queues: B can take exactly those.
        la.unlock(&mqs[..2], false).await;
        assert_eq!(la.tracked(), mqs[2..]);
        assert!(!la.is_locked(&mqs[0]));
        assert_eq!(lb.lock(&mqs).await, mqs[..2]);
        // A's renewal does not re-take what it unlocked.
        assert_eq!(la.renew_all().await, mqs[2..]);
        // renew() only touches tracked queues: A cannot renew B's.
        assert!(la.renew(&mqs[..2]).await.is_empty());

        // A lease that ran out makes the lock stale without any broker call. The lease is long
        // enough for the lock to be fresh when its call returns, also on a loaded machine (50 ms
        // was not).
        let lease = Duration::from_secs(2);
        let short = QueueLocks::new(a.clone(), group.as_str()).with_lease(lease);
        assert_eq!(short.lock(&mqs[2..3]).await, mqs[2..3]);
        assert!(short.is_locked_and_fresh(&mqs[2]));
        tokio::time::sleep(lease + Duration::from_millis(100)).await;
        assert!(short.is_locked(&mqs[2]));
        assert!(!short.is_locked_and_fresh(&mqs[2]));
        short.forget(&mqs[2]);

        la.unlock_all(false).await;
        lb.unlock_all(true).await;
        assert!(la.tracked().is_empty() && lb.tracked().is_empty());
        // Oneway unlocks may still be in flight: poll until A can take all.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if la.lock(&mqs).await == mqs {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "B's oneway unlock took effect"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        la.unlock_all(false).await;
        a.release().await;
        b.release().await;
    };
    within(120, "the lock test", run).await;
}

/// A renewal that read the tracked queues just before an unlock must not lock the queue again
/// on the broker: the broker would keep that lock for 60 s and refuse the queue's next owner.
/// The renewal and the unlock are started together, many times; each time the other client
/// takes the queue at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlock_racing_a_renewal_leaves_the_queue_free() {
    const ROUNDS: usize = 30;
    let run = async {
        let Pair {
            a, b, mqs, la, lb, ..
        } = Pair::new("lock_race", 2).await;
        for round in 0..ROUNDS {
            assert_eq!(la.lock(&mqs).await, mqs, "round {round}: A locks both");
            // The renewal reads both queues first; the unlock of queue 0 starts at once after.
            let (renewed, ()) = tokio::join!(la.renew_all(), la.unlock(&mqs[..1], false));
            assert!(renewed.contains(&mqs[1]), "round {round}: {renewed:?}");
            assert_eq!(la.tracked(), mqs[1..], "round {round}");
            assert_eq!(
                lb.lock(&mqs[..1]).await,
                mqs[..1],
                "round {round}: B takes the queue A released (A's renewal locked it again)"
            );
            lb.unlock(&mqs[..1], false).await;
            la.unlock_all(false).await;
        }
        a.release().await;
        b.release().await;
    };
    within(120, "the lock race test", run).await;
}
