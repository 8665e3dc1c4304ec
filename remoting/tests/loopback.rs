//! `RemotingClient` against scripted servers on 127.0.0.1.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::join_all;
use rmq_protocol::{LanguageCode, RemotingCommand, RequestCode, ResponseCode, SerializeType};
use rmq_remoting::{ClientOptions, CloseReason, Error, RemotingClient, RpcHook};
use rmq_testkit::loopback::{
    STEP, TestServer, echo, expect_eof, next_frame, send, serve_echo, within,
};
use tokio::io::AsyncWriteExt;

const LONG: Duration = Duration::from_secs(20);

fn client() -> RemotingClient {
    RemotingClient::new(ClientOptions::default())
}

fn request(body: &str) -> RemotingCommand {
    RemotingCommand::new_request(RequestCode::HEART_BEAT)
        .with_body(Bytes::copy_from_slice(body.as_bytes()))
}

#[tokio::test]
async fn invoke_round_trip() {
    within(async {
        let mut server = TestServer::start().await;
        let client = client();
        let call = tokio::spawn({
            let (client, addr) = (client.clone(), server.addr.clone());
            async move { client.invoke(&addr, request("ping"), LONG).await }
        });
        let mut peer = server.accept().await;
        let req = next_frame(&mut peer).await;
        assert!(!req.is_response() && !req.is_oneway());
        assert_eq!(req.request_code(), RequestCode::HEART_BEAT);
        assert_eq!(req.language, LanguageCode::Rust);
        assert_eq!(req.serialize_type, SerializeType::Json);
        send(&mut peer, echo(&req)).await;
        let resp = call.await.unwrap().unwrap();
        assert_eq!(resp.response_code(), ResponseCode::SUCCESS);
        assert_eq!(resp.opaque, req.opaque);
        assert_eq!(&resp.body[..], b"ping");
        assert_eq!(client.pending_requests(&server.addr), 0);
        assert_eq!(client.connection_count(), 1);
        client.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_invokes_answered_out_of_order_share_one_connection() {
    within(async {
        let mut server = TestServer::start().await;
        let client = client();
        let calls = (0..200).map(|i| {
            let (client, addr) = (client.clone(), server.addr.clone());
            tokio::spawn(
                async move { (i, client.invoke(&addr, request(&i.to_string()), LONG).await) },
            )
        });
        let calls: Vec<_> = calls.collect();
        let mut peer = server.accept().await;
        let mut reqs = Vec::new();
        for _ in 0..200 {
            reqs.push(next_frame(&mut peer).await);
        }
        assert_eq!(client.pending_requests(&server.addr), 200);
        // Answer in reverse order, interleaved with a response nobody waits for.
        send(&mut peer, echo(&request("stray").with_opaque(-5))).await;
        for req in reqs.iter().rev() {
            send(&mut peer, echo(req)).await;
        }
        for result in join_all(calls).await {
            let (i, resp) = result.unwrap();
            assert_eq!(resp.unwrap().body, Bytes::from(i.to_string()));
        }
        assert!(
            !server.accepts_within(Duration::from_millis(100)).await,
            "a second connection was opened"
        );
        assert_eq!(client.total_pending_requests(), 0);
        client.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn timeout_removes_the_waiter_and_a_late_response_is_dropped() {
    within(async {
        let mut server = TestServer::start().await;
        let client = client();
        let call = tokio::spawn({
            let (client, addr) = (client.clone(), server.addr.clone());
            async move {
                client
                    .invoke(&addr, request("slow"), Duration::from_millis(300))
                    .await
            }
        });
        let mut peer = server.accept().await;
        let req = next_frame(&mut peer).await;
        let err = call.await.unwrap().unwrap_err();
        assert!(err.is_timeout(), "{err:?}");
        assert!(
            matches!(
                err,
                Error::Timeout {
                    written: true,
                    code: RequestCode::HEART_BEAT,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(!err.is_retry_safe());
        assert_eq!(client.pending_requests(&server.addr), 0);

        // The late answer is dropped; the connection keeps working.
        send(&mut peer, echo(&req)).await;
        let serve = serve_echo(peer);
        let resp = client
            .invoke(&server.addr, request("next"), LONG)
            .await
            .unwrap();
        assert_eq!(&resp.body[..], b"next");
        assert_eq!(client.connection_count(), 1);
        client.shutdown().await;
        serve.await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn dropping_the_invoke_future_removes_the_waiter() {
    within(async {
        let mut server = TestServer::start().await;
        let client = client();
        let call = tokio::spawn({
            let (client, addr) = (client.clone(), server.addr.clone());
            async move { client.invoke(&addr, request("x"), LONG).await }
        });
        let mut peer = server.accept().await;
        let _req = next_frame(&mut peer).await;
        assert_eq!(client.pending_requests(&server.addr), 1);
        call.abort();
        let _ = call.await;
        assert_eq!(client.pending_requests(&server.addr), 0);
        client.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn server_closing_fails_pending_calls_promptly_and_next_call_reconnects() {
    within(async {
        let mut server = TestServer::start().await;
        let client = client();
        let calls: Vec<_> = (0..3)
            .map(|i| {
                let (client, addr) = (client.clone(), server.addr.clone());
                tokio::spawn(
                    async move { client.invoke(&addr, request(&i.to_string()), LONG).await },
                )
            })
            .collect();
        let mut peer = server.accept().await;
        for _ in 0..3 {
            next_frame(&mut peer).await;
        }
        let closed_at = Instant::now();
        drop(peer);
        for result in join_all(calls).await {
            let err = result.unwrap().unwrap_err();
            assert!(err.is_connection_closed(), "{err:?}");
            assert!(
                matches!(
                    err,
                    Error::ConnectionClosed {
                        written: true,
                        reason: CloseReason::PeerClosed,
                        ..
                    }
                ),
                "{err:?}"
            );
            assert!(err.is_retryable() && !err.is_retry_safe());
        }
        assert!(closed_at.elapsed() < Duration::from_secs(2));
        assert_eq!(client.connection_count(), 0);

        let call = tokio::spawn({
            let (client, addr) = (client.clone(), server.addr.clone());
            async move { client.invoke(&addr, request("again"), LONG).await }
        });
        let serve = serve_echo(server.accept().await);
        assert_eq!(&call.await.unwrap().unwrap().body[..], b"again");
        assert_eq!(client.connection_count(), 1);
        client.shutdown().await;
        serve.await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn garbage_from_one_server_closes_only_that_connection() {
    within(async {
        let mut bad = TestServer::start().await;
        let mut good = TestServer::start().await;
        let client = client();
        let bad_call = tokio::spawn({
            let (client, addr) = (client.clone(), bad.addr.clone());
            async move { client.invoke(&addr, request("x"), LONG).await }
        });
        let mut bad_peer = bad.accept().await;
        next_frame(&mut bad_peer).await;
        let good_call = tokio::spawn({
            let (client, addr) = (client.clone(), good.addr.clone());
            async move { client.invoke(&addr, request("ok"), LONG).await }
        });
        let serve = serve_echo(good.accept().await);
        assert_eq!(&good_call.await.unwrap().unwrap().body[..], b"ok");
        assert_eq!(client.connection_count(), 2);

        // A negative total length: not a frame.
        bad_peer
            .get_mut()
            .write_all(b"\xff\xff\xff\xf0garbage!garbage!")
            .await
            .unwrap();
        let err = bad_call.await.unwrap().unwrap_err();
        assert!(
            matches!(
                err,
                Error::ConnectionClosed {
                    written: true,
                    reason: CloseReason::BadFrame(_),
                    ..
                }
            ),
            "{err:?}"
        );
        expect_eof(&mut bad_peer).await;
        assert_eq!(client.connection_count(), 1);
        let resp = client
            .invoke(&good.addr, request("still"), LONG)
            .await
            .unwrap();
        assert_eq!(&resp.body[..], b"still");
        client.shutdown().await;
        serve.await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn broker_request_goes_to_the_handler_and_its_response_is_written_back() {
    within(async {
        let mut server = TestServer::start().await;
        let client = client();
        let addr_seen = Arc::new(std::sync::Mutex::new(String::new()));
        let seen = Arc::clone(&addr_seen);
        client.register_handler(
            RequestCode::GET_CONSUMER_RUNNING_INFO,
            Arc::new(move |addr: &str, req: RemotingCommand| {
                *seen.lock().unwrap() = addr.to_owned();
                async move {
                    // Answer with a plain response; the client sets opaque and flag.
                    let group = req
                        .ext_field("consumerGroup")
                        .unwrap_or_default()
                        .to_owned();
                    Some(
                        RemotingCommand::new_response(ResponseCode::SUCCESS, None).with_body(group),
                    )
                }
            }),
        );
        let call = tokio::spawn({
            let (client, addr) = (client.clone(), server.addr.clone());
            async move { client.invoke(&addr, request("pending"), LONG).await }
        });
        let mut peer = server.accept().await;
        let pending = next_frame(&mut peer).await;

        // The broker's opaque collides with the client's pending one: it must
        // not complete the client's request.
        let broker_req = RemotingCommand::new_request(RequestCode::GET_CONSUMER_RUNNING_INFO)
            .with_ext_field("consumerGroup", "g1")
            .with_opaque(pending.opaque);
        send(&mut peer, broker_req).await;
        let resp = next_frame(&mut peer).await;
        assert!(resp.is_response());
        assert_eq!(resp.opaque, pending.opaque);
        assert_eq!(resp.response_code(), ResponseCode::SUCCESS);
        assert_eq!(&resp.body[..], b"g1");
        assert_eq!(*addr_seen.lock().unwrap(), server.addr);
        assert!(!call.is_finished());
        assert_eq!(client.pending_requests(&server.addr), 1);

        send(&mut peer, echo(&pending)).await;
        assert_eq!(&call.await.unwrap().unwrap().body[..], b"pending");
        client.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn oneway_broker_request_runs_the_handler_and_gets_no_response() {
    within(async {
        let mut server = TestServer::start().await;
        let client = client();
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&calls);
        client.register_handler(
            RequestCode::NOTIFY_CONSUMER_IDS_CHANGED,
            Arc::new(move |_: &str, req: RemotingCommand| {
                counter.fetch_add(1, Ordering::SeqCst);
                // Even a returned command must not be sent for a oneway request.
                async move {
                    Some(RemotingCommand::response_to(
                        &req,
                        ResponseCode::SUCCESS,
                        None,
                    ))
                }
            }),
        );
        let serve_call = tokio::spawn({
            let (client, addr) = (client.clone(), server.addr.clone());
            async move { client.invoke(&addr, request("connect"), LONG).await }
        });
        let mut peer = server.accept().await;
        let first = next_frame(&mut peer).await;
        send(&mut peer, echo(&first)).await;
        serve_call.await.unwrap().unwrap();

        let mut notify = RemotingCommand::new_request(RequestCode::NOTIFY_CONSUMER_IDS_CHANGED)
            .with_ext_field("consumerGroup", "g")
            .with_opaque(1);
        notify.set_oneway();
        send(&mut peer, notify).await;
        // A later non-oneway request with an unknown code: the next frame the
        // server reads must be its answer, not one for the oneway.
        send(
            &mut peer,
            RemotingCommand::new_request(RequestCode(54321)).with_opaque(2),
        )
        .await;
        let resp = next_frame(&mut peer).await;
        assert_eq!(resp.opaque, 2);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        client.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn unknown_request_code_gets_request_code_not_supported() {
    within(async {
        let mut server = TestServer::start().await;
        let client = client();
        let call = tokio::spawn({
            let (client, addr) = (client.clone(), server.addr.clone());
            async move { client.invoke(&addr, request("connect"), LONG).await }
        });
        let mut peer = server.accept().await;
        let first = next_frame(&mut peer).await;
        send(&mut peer, echo(&first)).await;
        call.await.unwrap().unwrap();

        send(
            &mut peer,
            RemotingCommand::new_request(RequestCode(9999)).with_opaque(77),
        )
        .await;
        let resp = next_frame(&mut peer).await;
        assert!(resp.is_response());
        assert_eq!(resp.opaque, 77);
        assert_eq!(
            resp.response_code(),
            ResponseCode::REQUEST_CODE_NOT_SUPPORTED
        );
        assert!(resp.remark.unwrap_or_default().contains("9999"));
        client.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn oneway_request_is_flagged_and_resolves_without_a_response() {
    within(async {
        let mut server = TestServer::start().await;
        let client = client();
        let call = tokio::spawn({
            let (client, addr) = (client.clone(), server.addr.clone());
            async move { client.invoke_oneway(&addr, request("fire"), LONG).await }
        });
        let mut peer = server.accept().await;
        let req = next_frame(&mut peer).await;
        assert!(req.is_oneway() && !req.is_response());
        assert_eq!(&req.body[..], b"fire");
        call.await.unwrap().unwrap();
        assert_eq!(client.total_pending_requests(), 0);
        client.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_queue_backpressure_does_not_deadlock() {
    within(async {
        let mut server = TestServer::start().await;
        let client = RemotingClient::new(ClientOptions::default().with_write_queue_capacity(2));
        let body = Bytes::from(vec![b'x'; 256 * 1024]);
        let calls: Vec<_> = (0..64)
            .map(|_| {
                let (client, addr, body) = (client.clone(), server.addr.clone(), body.clone());
                tokio::spawn(async move {
                    client
                        .invoke(
                            &addr,
                            RemotingCommand::new_request(RequestCode::SEND_MESSAGE).with_body(body),
                            LONG,
                        )
                        .await
                })
            })
            .collect();
        let peer = server.accept().await;
        // Before reading, wait until the client is ahead of the reader: a
        // socket buffer's worth unread (the write queue behind it fills up).
        let mut unread = vec![0u8; 32 * 1024];
        tokio::time::timeout(STEP, async {
            while peer.get_ref().peek(&mut unread).await.unwrap() < unread.len() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("the client wrote ahead of the reader");
        let serve = serve_echo(peer);
        for result in join_all(calls).await {
            assert_eq!(result.unwrap().unwrap().body.len(), body.len());
        }
        client.shutdown().await;
        serve.await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_reads_times_calls_out_and_shutdown_still_completes() {
    within(async {
        let mut server = TestServer::start().await;
        let client = RemotingClient::new(ClientOptions::default().with_write_queue_capacity(2));
        let body = Bytes::from(vec![b'x'; 1024 * 1024]);
        let calls: Vec<_> = (0..32)
            .map(|_| {
                let (client, addr, body) = (client.clone(), server.addr.clone(), body.clone());
                tokio::spawn(async move {
                    let cmd =
                        RemotingCommand::new_request(RequestCode::SEND_MESSAGE).with_body(body);
                    client.invoke(&addr, cmd, Duration::from_millis(500)).await
                })
            })
            .collect();
        let _peer = server.accept().await;
        let mut never_sent = 0;
        for result in join_all(calls).await {
            let err = result.unwrap().unwrap_err();
            assert!(err.is_timeout(), "{err:?}");
            never_sent += usize::from(err.is_retry_safe());
        }
        assert!(
            never_sent > 0,
            "some calls should have timed out waiting for queue room"
        );
        assert_eq!(client.total_pending_requests(), 0);
        tokio::time::timeout(STEP, client.shutdown())
            .await
            .expect("shutdown hung");
    })
    .await;
}

#[tokio::test]
async fn shutdown_closes_everything_and_later_calls_fail() {
    within(async {
        let mut server = TestServer::start().await;
        let client = client();
        // A handler that never finishes must not keep shutdown waiting.
        let arrived = Arc::new(tokio::sync::Notify::new());
        let seen = arrived.clone();
        client.register_handler(
            RequestCode::GET_CONSUMER_RUNNING_INFO,
            Arc::new(move |_: &str, _req: RemotingCommand| {
                let seen = seen.clone();
                async move {
                    seen.notify_one();
                    std::future::pending::<()>().await;
                    None
                }
            }),
        );
        let call = tokio::spawn({
            let (client, addr) = (client.clone(), server.addr.clone());
            async move { client.invoke(&addr, request("pending"), LONG).await }
        });
        let mut peer = server.accept().await;
        next_frame(&mut peer).await;
        send(
            &mut peer,
            RemotingCommand::new_request(RequestCode::GET_CONSUMER_RUNNING_INFO).with_opaque(9),
        )
        .await;
        // The handler runs: the request reached the client.
        tokio::time::timeout(STEP, arrived.notified())
            .await
            .expect("the broker request reached the handler");

        tokio::time::timeout(STEP, client.shutdown())
            .await
            .expect("shutdown hung");
        assert!(matches!(call.await.unwrap(), Err(Error::Shutdown)));
        expect_eof(&mut peer).await;
        assert_eq!(client.connection_count(), 0);
        assert!(client.is_shutdown());
        assert!(matches!(
            client.invoke(&server.addr, request("late"), LONG).await,
            Err(Error::Shutdown)
        ));
        assert!(matches!(
            client
                .invoke_oneway(&server.addr, request("late"), LONG)
                .await,
            Err(Error::Shutdown)
        ));
        assert!(!server.accepts_within(Duration::from_millis(100)).await);
        client.shutdown().await; // idempotent
    })
    .await;
}

#[tokio::test]
async fn close_connection_fails_pending_calls_and_the_next_call_reconnects() {
    within(async {
        let mut server = TestServer::start().await;
        let client = client();
        let call = tokio::spawn({
            let (client, addr) = (client.clone(), server.addr.clone());
            async move { client.invoke(&addr, request("x"), LONG).await }
        });
        let mut peer = server.accept().await;
        next_frame(&mut peer).await;
        assert!(client.close_connection(&server.addr));
        let err = call.await.unwrap().unwrap_err();
        assert!(
            matches!(
                err,
                Error::ConnectionClosed {
                    written: true,
                    reason: CloseReason::ClosedLocally,
                    ..
                }
            ),
            "{err:?}"
        );
        expect_eof(&mut peer).await;
        assert!(!client.close_connection(&server.addr));

        let call = tokio::spawn({
            let (client, addr) = (client.clone(), server.addr.clone());
            async move { client.invoke(&addr, request("y"), LONG).await }
        });
        let serve = serve_echo(server.accept().await);
        assert_eq!(&call.await.unwrap().unwrap().body[..], b"y");
        client.shutdown().await;
        serve.await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn connect_failure_is_retry_safe() {
    within(async {
        // Bind then drop a listener to get a port nobody listens on.
        let addr = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().to_string()
        };
        let client = client();
        let err = client.invoke(&addr, request("x"), LONG).await.unwrap_err();
        assert!(matches!(err, Error::Connect { .. }), "{err:?}");
        assert!(err.is_retry_safe() && err.is_retryable());
        assert_eq!(client.connection_count(), 0);
        client.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn oversized_request_fails_alone_and_the_connection_stays_up() {
    within(async {
        let mut server = TestServer::start().await;
        let client = RemotingClient::new(ClientOptions::default().with_max_frame_len(4096));
        let call = tokio::spawn({
            let (client, addr) = (client.clone(), server.addr.clone());
            async move { client.invoke(&addr, request("small"), LONG).await }
        });
        let serve = serve_echo(server.accept().await);
        call.await.unwrap().unwrap();
        let big =
            RemotingCommand::new_request(RequestCode::SEND_MESSAGE).with_body(vec![0u8; 8192]);
        let err = client.invoke(&server.addr, big, LONG).await.unwrap_err();
        assert!(matches!(err, Error::Protocol(_)), "{err:?}");
        assert_eq!(client.pending_requests(&server.addr), 0);
        let resp = client
            .invoke(&server.addr, request("after"), LONG)
            .await
            .unwrap();
        assert_eq!(&resp.body[..], b"after");
        client.shutdown().await;
        serve.await.unwrap();
    })
    .await;
}

#[derive(Default)]
struct CountingHook {
    after: AtomicUsize,
}

impl RpcHook for CountingHook {
    fn before_request(&self, _addr: &str, request: &mut RemotingCommand) {
        request.ext_fields.insert("AccessKey".into(), "ak".into());
    }

    fn after_response(
        &self,
        _addr: &str,
        request: &RemotingCommand,
        response: &mut RemotingCommand,
    ) {
        assert_eq!(request.ext_field("AccessKey"), Some("ak"));
        response.remark = Some("seen by hook".into());
        self.after.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn rpc_hook_sees_every_request_and_response() {
    within(async {
        let mut server = TestServer::start().await;
        let hook = Arc::new(CountingHook::default());
        let client = RemotingClient::new(ClientOptions::default().with_rpc_hook(hook.clone()));
        let call = tokio::spawn({
            let (client, addr) = (client.clone(), server.addr.clone());
            async move { client.invoke(&addr, request("x"), LONG).await }
        });
        let mut peer = server.accept().await;
        let req = next_frame(&mut peer).await;
        assert_eq!(req.ext_field("AccessKey"), Some("ak"));
        send(&mut peer, echo(&req)).await;
        let resp = call.await.unwrap().unwrap();
        assert_eq!(resp.remark.as_deref(), Some("seen by hook"));
        assert_eq!(hook.after.load(Ordering::SeqCst), 1);

        let oneway = tokio::spawn({
            let (client, addr) = (client.clone(), server.addr.clone());
            async move { client.invoke_oneway(&addr, request("o"), LONG).await }
        });
        let req = next_frame(&mut peer).await;
        assert_eq!(req.ext_field("AccessKey"), Some("ak"));
        oneway.await.unwrap().unwrap();
        client.shutdown().await;
    })
    .await;
}
