//! Handlers of broker → client requests, routed to the consumer (or
//! producer) of the group named in the request (Java
//! `ClientRemotingProcessor`).
//!
//! | code | oneway | answer |
//! |---|---|---|
//! | CHECK_TRANSACTION_STATE | yes | none; the producer of the message's `PGROUP` answers END_TRANSACTION later |
//! | NOTIFY_CONSUMER_IDS_CHANGED | yes | none; `notify_ids_changed` |
//! | RESET_CONSUMER_CLIENT_OFFSET | yes | none; `reset_offset` |
//! | GET_CONSUMER_RUNNING_INFO | no | SUCCESS + running info, or SYSTEM_ERROR |
//! | CONSUME_MESSAGE_DIRECTLY | no | SUCCESS + result, or SYSTEM_ERROR |

use std::future::Future;
use std::sync::{Arc, Weak};

use rmq_protocol::body::{
    ConsumerRunningInfo, PROP_CLIENT_VERSION, PROP_NAMESERVER_ADDR, ResetOffsetBody,
};
use rmq_protocol::header::{
    CheckTransactionStateRequestHeader, CommandHeader, ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader, NotifyConsumerIdsChangedRequestHeader,
    ResetOffsetRequestHeader,
};
use rmq_protocol::message::{decode_message, property};
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use tracing::{debug, warn};

use super::{ClientInstance, Inner};
use crate::consumer::ConsumerHandle;
use crate::producer::TransactionCheckRequest;

/// Registers every handler on the instance's remoting client. Handlers
/// hold a weak reference: the remoting client lives inside the instance.
pub(super) fn register(instance: &ClientInstance) {
    oneway(
        instance,
        RequestCode::NOTIFY_CONSUMER_IDS_CHANGED,
        |i, addr, req| notify_consumer_ids_changed(&i, &addr, &req),
    );
    oneway(
        instance,
        RequestCode::RESET_CONSUMER_CLIENT_OFFSET,
        |i, addr, req| reset_offset(&i, &addr, &req),
    );
    on(
        instance,
        RequestCode::GET_CONSUMER_RUNNING_INFO,
        |i, addr, req| async move { Some(running_info(&i, &addr, &req)) },
    );
    on(
        instance,
        RequestCode::CONSUME_MESSAGE_DIRECTLY,
        |i, addr, req| async move { Some(consume_message_directly(&i, &addr, &req).await) },
    );
    oneway(
        instance,
        RequestCode::CHECK_TRANSACTION_STATE,
        |i, addr, req| check_transaction_state(&i, addr, req),
    );
}

/// Registers `f` for `code`, a request answered with nothing (oneway);
/// `f` runs in the handler's task, as an `on` handler does.
fn oneway(
    instance: &ClientInstance,
    code: RequestCode,
    f: fn(ClientInstance, String, RemotingCommand),
) {
    on(instance, code, move |i, addr, req| async move {
        f(i, addr, req);
        None
    });
}

/// Registers `f` for `code`, upgrading the weak instance per request.
fn on<F, Fut>(instance: &ClientInstance, code: RequestCode, f: F)
where
    F: Fn(ClientInstance, String, RemotingCommand) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<RemotingCommand>> + Send + 'static,
{
    let weak: Weak<Inner> = instance.downgrade();
    let f = Arc::new(f);
    instance.inner.remoting.register_handler(
        code,
        Arc::new(move |addr: &str, request: RemotingCommand| {
            let instance = ClientInstance::from_weak(&weak);
            let addr = addr.to_owned();
            let f = Arc::clone(&f);
            async move {
                match instance {
                    Some(instance) => f(instance, addr, request).await,
                    None => None,
                }
            }
        }),
    );
}

/// SYSTEM_ERROR with Java's remark for a group this client does not have.
fn unknown_group(request: &RemotingCommand, group: &str) -> RemotingCommand {
    RemotingCommand::response_to(
        request,
        ResponseCode::SYSTEM_ERROR,
        Some(format!(
            "The Consumer Group <{group}> not exist in this consumer"
        )),
    )
}

fn bad_header(request: &RemotingCommand, e: &rmq_protocol::Error) -> RemotingCommand {
    RemotingCommand::response_to(
        request,
        ResponseCode::SYSTEM_ERROR,
        Some(format!("bad request header: {e}")),
    )
}

/// The request's header and the consumer of the group it names
/// (`group_of`); else the answer to send (SYSTEM_ERROR: a bad header, or a
/// group this client does not have), boxed: it is the rare path.
fn header_and_consumer<H: CommandHeader>(
    instance: &ClientInstance,
    request: &RemotingCommand,
    group_of: impl Fn(&H) -> &String,
) -> Result<(H, Arc<dyn ConsumerHandle>), Box<RemotingCommand>> {
    let header: H = request
        .decode_header()
        .map_err(|e| Box::new(bad_header(request, &e)))?;
    match instance.consumer(group_of(&header)) {
        Some(consumer) => Ok((header, consumer)),
        None => Err(Box::new(unknown_group(request, group_of(&header)))),
    }
}

/// SUCCESS with the JSON `body`, or SYSTEM_ERROR with why it could not be
/// encoded.
fn json_answer(request: &RemotingCommand, body: rmq_protocol::Result<Vec<u8>>) -> RemotingCommand {
    match body {
        Ok(body) => {
            RemotingCommand::response_to(request, ResponseCode::SUCCESS, None).with_body(body)
        }
        Err(e) => {
            RemotingCommand::response_to(request, ResponseCode::SYSTEM_ERROR, Some(e.to_string()))
        }
    }
}

/// NOTIFY_CONSUMER_IDS_CHANGED: wake the group's consumer.
fn notify_consumer_ids_changed(instance: &ClientInstance, addr: &str, request: &RemotingCommand) {
    let header: NotifyConsumerIdsChangedRequestHeader = match request.decode_header() {
        Ok(h) => h,
        Err(e) => {
            warn!(addr, error = %rmq_protocol::ErrorChain(&e), "bad NOTIFY_CONSUMER_IDS_CHANGED header");
            return;
        }
    };
    match instance.consumer(&header.consumer_group) {
        Some(consumer) => {
            debug!(addr, group = %header.consumer_group, "consumer ids changed");
            consumer.notify_ids_changed();
        }
        None => debug!(addr, group = %header.consumer_group, "ids changed for an unknown group"),
    }
}

/// RESET_CONSUMER_CLIENT_OFFSET: hand the offsets to the group's consumer.
fn reset_offset(instance: &ClientInstance, addr: &str, request: &RemotingCommand) {
    let header: ResetOffsetRequestHeader = match request.decode_header() {
        Ok(h) => h,
        Err(e) => {
            warn!(addr, error = %rmq_protocol::ErrorChain(&e), "bad RESET_CONSUMER_CLIENT_OFFSET header");
            return;
        }
    };
    let body = match ResetOffsetBody::decode(&request.body) {
        Ok(b) => b,
        Err(e) => {
            warn!(addr, group = %header.group, error = %rmq_protocol::ErrorChain(&e), "bad RESET_CONSUMER_CLIENT_OFFSET body");
            return;
        }
    };
    match instance.consumer(&header.group) {
        Some(consumer) => {
            debug!(addr, group = %header.group, topic = %header.topic, queues = body.offset_table.len(),
                "reset offsets");
            consumer.reset_offset(&header.topic, body.offset_table);
        }
        None => debug!(addr, group = %header.group, "offset reset for an unknown group"),
    }
}

/// CHECK_TRANSACTION_STATE: decode the half message and hand it to the
/// producer of its group (`PGROUP`); a group without a producer here is
/// logged and dropped (the broker asks another member of the group, or
/// this one again, after its check interval).
fn check_transaction_state(instance: &ClientInstance, addr: String, request: RemotingCommand) {
    let header: CheckTransactionStateRequestHeader = match request.decode_header() {
        Ok(h) => h,
        Err(e) => {
            warn!(addr, error = %rmq_protocol::ErrorChain(&e), "bad CHECK_TRANSACTION_STATE header");
            return;
        }
    };
    let message = match decode_message(&request.body) {
        Ok(m) => m,
        Err(e) => {
            warn!(addr, msg_id = ?header.msg_id, error = %rmq_protocol::ErrorChain(&e), "cannot decode the message of a CHECK_TRANSACTION_STATE");
            return;
        }
    };
    let Some(group) = message.property(property::PGROUP).map(str::to_owned) else {
        warn!(addr, msg_id = %message.msg_id, "CHECK_TRANSACTION_STATE for a message without a producer group (PGROUP)");
        return;
    };
    match instance.producer_handle(&group) {
        Some(producer) => {
            debug!(addr, group, msg_id = %message.msg_id, "transaction check");
            producer.check_transaction_state(TransactionCheckRequest {
                broker_addr: addr,
                header,
                message,
            });
        }
        None => debug!(
            addr, group, msg_id = %message.msg_id,
            "transaction check for a group without a transactional producer in this client; dropped"
        ),
    }
}

/// GET_CONSUMER_RUNNING_INFO: the consumer's info plus the instance's
/// properties.
fn running_info(
    instance: &ClientInstance,
    addr: &str,
    request: &RemotingCommand,
) -> RemotingCommand {
    let (header, consumer) = match header_and_consumer(
        instance,
        request,
        |h: &GetConsumerRunningInfoRequestHeader| &h.consumer_group,
    ) {
        Ok(found) => found,
        Err(answer) => return *answer,
    };
    let mut info: ConsumerRunningInfo = consumer.running_info();
    info.properties.insert(
        PROP_NAMESERVER_ADDR.to_owned(),
        instance.config().namesrv_addrs().join(";"),
    );
    info.properties.insert(
        PROP_CLIENT_VERSION.to_owned(),
        RemotingCommand::CLIENT_VERSION.to_string(),
    );
    let body = info.to_json_bytes().inspect_err(|e| {
        warn!(addr, group = %header.consumer_group, error = %rmq_protocol::ErrorChain(e), "cannot encode running info");
    });
    json_answer(request, body)
}

/// CONSUME_MESSAGE_DIRECTLY: decode the message, let the consumer consume
/// it, answer its result.
async fn consume_message_directly(
    instance: &ClientInstance,
    addr: &str,
    request: &RemotingCommand,
) -> RemotingCommand {
    let (header, consumer) = match header_and_consumer(
        instance,
        request,
        |h: &ConsumeMessageDirectlyResultRequestHeader| &h.consumer_group,
    ) {
        Ok(found) => found,
        Err(answer) => return *answer,
    };
    let msg = match decode_message(&request.body) {
        Ok(m) => m,
        Err(e) => {
            return RemotingCommand::response_to(
                request,
                ResponseCode::SYSTEM_ERROR,
                Some(format!("cannot decode the message: {e}")),
            );
        }
    };
    let group = header.consumer_group.clone();
    match consumer
        .consume_message_directly(msg, header.broker_name)
        .await
    {
        Some(result) => json_answer(request, result.to_json_bytes()),
        None => {
            debug!(addr, group, "consumer cannot consume directly");
            unknown_group(request, &group)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::future::BoxFuture;
    use rmq_protocol::body::{CmResult, ConsumeMessageDirectlyResult, ConsumerData};
    use rmq_protocol::message::{MessageVersion, encode_stored_message};
    use rmq_protocol::{Message, MessageExt, MessageQueue};

    use super::*;
    use crate::{ClientConfig, ConsumerHandle};

    type Resets = std::sync::Mutex<Vec<(String, Vec<(MessageQueue, i64)>)>>;

    #[derive(Default)]
    struct Fake {
        notified: AtomicUsize,
        resets: Resets,
    }

    impl ConsumerHandle for Fake {
        fn consumer_data(&self) -> ConsumerData {
            ConsumerData {
                group_name: "G".into(),
                ..ConsumerData::default()
            }
        }
        fn notify_ids_changed(&self) {
            self.notified.fetch_add(1, Ordering::SeqCst);
        }
        fn reset_offset(&self, topic: &str, offsets: Vec<(MessageQueue, i64)>) {
            self.resets
                .lock()
                .unwrap()
                .push((topic.to_owned(), offsets));
        }
        fn consume_message_directly(
            &self,
            msg: MessageExt,
            _broker_name: Option<String>,
        ) -> BoxFuture<'static, Option<ConsumeMessageDirectlyResult>> {
            Box::pin(async move {
                Some(ConsumeMessageDirectlyResult {
                    consume_result: Some(CmResult::CrSuccess),
                    remark: Some(String::from_utf8_lossy(&msg.body).into_owned()),
                    ..ConsumeMessageDirectlyResult::default()
                })
            })
        }
    }

    async fn instance(name: &str) -> (ClientInstance, Arc<Fake>) {
        let config = ClientConfig::builder()
            .namesrv_addr("127.0.0.1:1")
            .client_ip("127.0.0.1")
            .instance_name(name)
            .build()
            .unwrap();
        let i = ClientInstance::get_or_start(config).unwrap();
        let fake = Arc::new(Fake::default());
        i.register_consumer("G", fake.clone()).await.unwrap();
        (i, fake)
    }

    fn request(code: RequestCode, group_key: &str, group: &str) -> RemotingCommand {
        RemotingCommand::new_request(code).with_ext_field(group_key, group)
    }

    #[tokio::test]
    async fn oneway_requests_reach_the_consumer() {
        let (i, fake) = instance("h-oneway").await;
        notify_consumer_ids_changed(
            &i,
            "b",
            &request(
                RequestCode::NOTIFY_CONSUMER_IDS_CHANGED,
                "consumerGroup",
                "G",
            ),
        );
        notify_consumer_ids_changed(
            &i,
            "b",
            &request(
                RequestCode::NOTIFY_CONSUMER_IDS_CHANGED,
                "consumerGroup",
                "X",
            ),
        );
        assert_eq!(fake.notified.load(Ordering::SeqCst), 1);

        let reset = request(RequestCode::RESET_CONSUMER_CLIENT_OFFSET, "group", "G")
            .with_ext_field("topic", "T")
            .with_ext_field("timestamp", "-1")
            .with_ext_field("isForce", "false")
            .with_body(r#"{"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:42}}"#);
        reset_offset(&i, "b", &reset);
        let resets = fake.resets.lock().unwrap().clone();
        assert_eq!(
            resets,
            [("T".to_owned(), vec![(MessageQueue::new("T", "b", 1), 42)])]
        );
        i.shutdown().await;
    }

    #[derive(Default)]
    struct FakeProducer {
        checks: std::sync::Mutex<Vec<TransactionCheckRequest>>,
    }

    impl crate::ProducerHandle for FakeProducer {
        fn check_transaction_state(&self, request: TransactionCheckRequest) {
            self.checks.lock().unwrap().push(request);
        }
    }

    fn check_request(group: Option<&str>) -> RemotingCommand {
        let mut message = Message::new("T", "half");
        message.set_property(property::UNIQ_KEY, "U1");
        if let Some(g) = group {
            message.set_property(property::PGROUP, g);
        }
        let stored = MessageExt {
            message,
            commit_log_offset: 77,
            ..MessageExt::default()
        };
        let body = encode_stored_message(&stored, MessageVersion::V1, None).unwrap();
        let header = CheckTransactionStateRequestHeader {
            topic: Some("T".into()),
            tran_state_table_offset: 5,
            commit_log_offset: 77,
            msg_id: Some("U1".into()),
            transaction_id: Some("U1".into()),
            offset_msg_id: Some("OFF".into()),
            broker_name: None,
        };
        RemotingCommand::request(RequestCode::CHECK_TRANSACTION_STATE, &header).with_body(body)
    }

    #[tokio::test]
    async fn transaction_checks_reach_the_producer_of_the_group() {
        let (i, _fake) = instance("h-check").await;
        let producer = Arc::new(FakeProducer::default());
        i.register_producer_handle("PG", producer.clone())
            .await
            .unwrap();
        let e = i
            .register_producer_handle("PG", producer.clone())
            .await
            .unwrap_err();
        assert!(matches!(e, crate::Error::DuplicateGroup { .. }), "{e}");

        check_transaction_state(&i, "b:1".into(), check_request(Some("PG")));
        // Another group, no group, a bad body: logged and dropped.
        check_transaction_state(&i, "b:1".into(), check_request(Some("OTHER")));
        check_transaction_state(&i, "b:1".into(), check_request(None));
        check_transaction_state(
            &i,
            "b:1".into(),
            check_request(Some("PG")).with_body("junk"),
        );
        {
            let checks = producer.checks.lock().unwrap();
            assert_eq!(checks.len(), 1);
            let c = &checks[0];
            assert_eq!(c.broker_addr, "b:1");
            assert_eq!(c.header.tran_state_table_offset, 5);
            assert_eq!(c.header.commit_log_offset, 77);
            assert_eq!(c.message.msg_id, "U1");
            assert_eq!(&c.message.body[..], b"half");
        }

        // Unregistering removes the route.
        i.unregister_producer("PG").await;
        assert!(i.producer_handle("PG").is_none());
        check_transaction_state(&i, "b:1".into(), check_request(Some("PG")));
        assert_eq!(producer.checks.lock().unwrap().len(), 1);
        i.shutdown().await;
    }

    #[tokio::test]
    async fn running_info_answers() {
        let (i, _fake) = instance("h-info").await;
        let req = request(RequestCode::GET_CONSUMER_RUNNING_INFO, "consumerGroup", "G")
            .with_ext_field("clientId", i.client_id())
            .with_opaque(7);
        let resp = running_info(&i, "b", &req);
        assert_eq!(resp.response_code(), ResponseCode::SUCCESS);
        assert_eq!(resp.opaque, 7);
        let info = ConsumerRunningInfo::decode(&resp.body).unwrap();
        assert_eq!(info.properties[PROP_NAMESERVER_ADDR], "127.0.0.1:1");

        let req = request(RequestCode::GET_CONSUMER_RUNNING_INFO, "consumerGroup", "X")
            .with_ext_field("clientId", i.client_id());
        let resp = running_info(&i, "b", &req);
        assert_eq!(resp.response_code(), ResponseCode::SYSTEM_ERROR);
        assert!(resp.remark.unwrap().contains("<X>"));
        i.shutdown().await;
    }

    #[tokio::test]
    async fn consume_directly_answers() {
        let (i, _fake) = instance("h-direct").await;
        let stored = MessageExt {
            message: Message::new("T", "hello"),
            ..MessageExt::default()
        };
        let body = encode_stored_message(&stored, MessageVersion::V1, None).unwrap();
        let req =
            request(RequestCode::CONSUME_MESSAGE_DIRECTLY, "consumerGroup", "G").with_body(body);
        let resp = consume_message_directly(&i, "b", &req).await;
        assert_eq!(resp.response_code(), ResponseCode::SUCCESS);
        let result = ConsumeMessageDirectlyResult::decode(&resp.body).unwrap();
        assert_eq!(result.consume_result, Some(CmResult::CrSuccess));
        assert_eq!(result.remark.as_deref(), Some("hello"));

        let bad =
            request(RequestCode::CONSUME_MESSAGE_DIRECTLY, "consumerGroup", "G").with_body("junk");
        assert_eq!(
            consume_message_directly(&i, "b", &bad)
                .await
                .response_code(),
            ResponseCode::SYSTEM_ERROR
        );
        let unknown = request(RequestCode::CONSUME_MESSAGE_DIRECTLY, "consumerGroup", "X");
        assert_eq!(
            consume_message_directly(&i, "b", &unknown)
                .await
                .response_code(),
            ResponseCode::SYSTEM_ERROR
        );
        i.shutdown().await;
    }
}
