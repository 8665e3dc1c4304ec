//! Killing the REAL broker fails pending calls promptly (not after their
//! timeout), and calls succeed again once it is back.
//!
//! Its own test binary, named to run last in this crate: it kills broker-a, so nothing else may run against
//! the broker at the same time (cargo runs test binaries one after another).

use std::time::{Duration, Instant};

use rmq_protocol::header::GetMaxOffsetRequestHeader;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_testkit::raw::{CALL, RawEnv, pull_request};
use rmq_testkit::{BROKER_A, unique_name};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "stops a local broker: run alone by the broker-fault step of scripts/test.sh (cargo test -- --ignored)"]
async fn killing_the_broker_fails_pending_calls_promptly_and_calls_recover() {
    // Run the scenario in its own task so that, whatever happens, broker-a is
    // started again before this test reports (later test binaries need it).
    let outcome = tokio::spawn(tokio::time::timeout(Duration::from_secs(240), scenario())).await;
    rmq_testkit::start_broker(BROKER_A).await;
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(_)) => panic!("test timed out"),
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

async fn scenario() {
    let env = RawEnv::new().await;
    let topic = env.topic("restart", 1).await;
    let group = unique_name("restart_g");

    // A long-polling pull on an empty queue: the broker holds it for 60 s,
    // the client would wait 75 s.
    let client = env.client.clone();
    let broker_addr = env.broker.clone();
    let request = pull_request(&group, &topic, 0, 0, 32, 60_000);
    let pending = tokio::spawn(async move {
        let started = Instant::now();
        let result = client
            .invoke(&broker_addr, request, Duration::from_secs(35))
            .await;
        (result, started.elapsed())
    });
    // Wait until the pull is registered as pending on the connection.
    let deadline = Instant::now() + Duration::from_secs(10);
    while env.client.pending_requests(&env.broker) == 0 {
        assert!(Instant::now() < deadline, "the pull never became pending");
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    rmq_testkit::kill_broker(BROKER_A).await;
    let killed_at = Instant::now();
    let (result, _) = pending.await.unwrap();
    let failed_after = killed_at.elapsed();
    let err = result.expect_err("the broker died under the pending pull");
    assert!(err.is_connection_closed(), "got {err:?}");
    assert!(
        failed_after < Duration::from_secs(5),
        "the pending call failed {failed_after:?} after the kill; it must fail promptly"
    );
    assert_eq!(
        env.client.pending_requests(&env.broker),
        0,
        "no waiter left behind"
    );

    // While it is down, calls fail fast with a connect error (retry-safe).
    let header = GetMaxOffsetRequestHeader {
        topic: topic.clone(),
        queue_id: 0,
        committed: Some(true),
        broker_name: None,
    };
    let down = env
        .client
        .invoke(
            &env.broker,
            RemotingCommand::request(RequestCode::GET_MAX_OFFSET, &header),
            CALL,
        )
        .await
        .expect_err("nobody listens");
    assert!(down.is_retry_safe(), "got {down:?}");

    let addr = rmq_testkit::start_broker(BROKER_A).await;
    assert_eq!(addr, env.broker, "same address after the restart");
    // The same client reconnects on the next call.
    let response = env
        .client
        .invoke_expect(
            &env.broker,
            RemotingCommand::request(RequestCode::GET_MAX_OFFSET, &header),
            CALL,
            &[ResponseCode::SUCCESS],
        )
        .await
        .expect("calls succeed again after the restart");
    assert!(response.ext_field("offset").is_some());
    env.client.shutdown().await;
}
