//! Every builder's `start` returns `rmq::Error`: a bad name-server address
//! is a configuration error whose text names the address and the expected
//! form, and the layer's own error comes back by downcasting. No broker is
//! needed: the address is refused before anything connects.
#![cfg(all(
    feature = "producer",
    feature = "consumer-push",
    feature = "consumer-pull"
))]

use rmq::prelude::*;

/// What `println!("{e}")` shows for the address "localhost".
fn assert_names_the_address(e: &rmq::Error) {
    let text = e.to_string();
    assert!(text.contains("\"localhost\""), "{text}");
    assert!(text.contains("host:port"), "{text}");
    assert!(text.contains("127.0.0.1:9876"), "{text}");
    assert_eq!(text.matches("host:port").count(), 1, "printed once: {text}");
    assert_eq!(e.kind(), ErrorKind::Config, "{e:?}");
    assert!(!e.is_retryable());
    assert!(!e.is_timeout());
}

#[tokio::test]
async fn producer_start_names_a_bad_name_server_address() {
    let e = Producer::builder()
        .group("errors_test_pg")
        .namesrv_addr("localhost")
        .start()
        .await
        .unwrap_err();
    assert_names_the_address(&e);
    assert!(matches!(
        e.downcast_ref::<rmq::producer::Error>(),
        Some(rmq::producer::Error::Client(_))
    ));
    assert!(e.find_cause::<rmq::client_core::Error>().is_some());
}

#[tokio::test]
async fn consumers_start_names_a_bad_name_server_address() {
    let e = PushConsumer::builder()
        .group("errors_test_cg")
        .namesrv_addr("localhost")
        .subscribe("errors_test_topic", "*")
        .start(rmq::listener!(async |_msgs, _ctx| ConsumeResult::Success))
        .await
        .unwrap_err();
    assert_names_the_address(&e);
    assert!(e.is::<rmq::consumer_push::Error>());

    let e = LitePullConsumer::builder()
        .group("errors_test_cg")
        .namesrv_addr("localhost")
        .subscribe("errors_test_topic", "*")
        .start()
        .await
        .unwrap_err();
    assert_names_the_address(&e);
    assert!(e.is::<rmq::consumer_pull::Error>());

    let e = PullConsumer::builder()
        .group("errors_test_cg")
        .namesrv_addr("localhost")
        .start()
        .await
        .unwrap_err();
    assert_names_the_address(&e);

    let e = rmq::SimpleConsumer::builder()
        .group("errors_test_cg")
        .namesrv_addr("localhost")
        .subscribe("errors_test_topic", Expression::all())
        .start()
        .await
        .unwrap_err();
    assert_names_the_address(&e);
}

#[tokio::test]
async fn a_bad_setting_is_a_config_error_with_the_detail_below() {
    let e = PushConsumer::builder()
        .group("errors_test_cg")
        .namesrv_addr("127.0.0.1:9876")
        .start(rmq::listener!(async |_msgs, _ctx| ConsumeResult::Success))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert!(e.to_string().contains("no subscription"), "{e}");
    match e.downcast::<rmq::consumer_push::Error>() {
        Ok(rmq::consumer_push::Error::Config(text)) => assert!(text.contains("subscribe")),
        other => panic!("expected the push consumer's config error, got {other:?}"),
    }
}
