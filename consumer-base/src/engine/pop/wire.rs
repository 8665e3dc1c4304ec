//! [`PopWire`]: the calls the pop engine makes, so that its decisions can
//! be driven by a scripted double in tests; [`ClientInstance`] is the real
//! one.

use std::future::Future;
use std::time::Duration;

use rmq_client_core::{ClientInstance, PopResult};
use rmq_protocol::MessageQueue;
use rmq_protocol::body::BatchAckMessageRequestBody;
use rmq_protocol::header::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
    ConsumerSendMsgBackRequestHeader, PopMessageRequestHeader,
};

/// What the pop engine asks of the network.
pub trait PopWire: Send + Sync {
    /// The master address of `mq`'s broker, refreshing the topic's route
    /// once when the broker is unknown (Java `findBrokerAddressInSubscribe`
    /// with the master id, then `updateTopicRouteInfoFromNameServer`).
    fn master_addr(
        &self,
        mq: &MessageQueue,
    ) -> impl Future<Output = rmq_client_core::Result<String>> + Send;

    /// POP_MESSAGE to the broker `broker_name` at `addr`; `timeout` `None`
    /// means the poll time plus the usual overhead.
    fn pop(
        &self,
        addr: &str,
        broker_name: &str,
        header: PopMessageRequestHeader,
        timeout: Option<Duration>,
    ) -> impl Future<Output = rmq_client_core::Result<PopResult>> + Send;

    /// ACK_MESSAGE: one message consumed, its checkpoint's bit set at the
    /// broker.
    fn ack(
        &self,
        addr: &str,
        header: AckMessageRequestHeader,
    ) -> impl Future<Output = rmq_client_core::Result<()>> + Send;

    /// BATCH_ACK_MESSAGE (brokers from 5.1 on; older ones answer
    /// REQUEST_CODE_NOT_SUPPORTED): the messages of several checkpoints
    /// of one broker in one request.
    fn batch_ack(
        &self,
        addr: &str,
        body: &BatchAckMessageRequestBody,
    ) -> impl Future<Output = rmq_client_core::Result<()>> + Send;

    /// CHANGE_MESSAGE_INVISIBLETIME.
    fn change_invisible(
        &self,
        addr: &str,
        header: ChangeInvisibleTimeRequestHeader,
    ) -> impl Future<Output = rmq_client_core::Result<ChangeInvisibleTimeResponseHeader>> + Send;

    /// CONSUMER_SEND_MSG_BACK (here: straight to the DLQ).
    fn send_back(
        &self,
        addr: &str,
        header: ConsumerSendMsgBackRequestHeader,
    ) -> impl Future<Output = rmq_client_core::Result<()>> + Send;
}

impl PopWire for ClientInstance {
    fn master_addr(
        &self,
        mq: &MessageQueue,
    ) -> impl Future<Output = rmq_client_core::Result<String>> + Send {
        ClientInstance::master_addr(self, mq)
    }

    fn pop(
        &self,
        addr: &str,
        broker_name: &str,
        header: PopMessageRequestHeader,
        timeout: Option<Duration>,
    ) -> impl Future<Output = rmq_client_core::Result<PopResult>> + Send {
        self.pop_message(addr, broker_name, header, timeout)
    }

    fn ack(
        &self,
        addr: &str,
        header: AckMessageRequestHeader,
    ) -> impl Future<Output = rmq_client_core::Result<()>> + Send {
        self.ack_message(addr, header)
    }

    fn batch_ack(
        &self,
        addr: &str,
        body: &BatchAckMessageRequestBody,
    ) -> impl Future<Output = rmq_client_core::Result<()>> + Send {
        self.batch_ack_message(addr, body)
    }

    fn change_invisible(
        &self,
        addr: &str,
        header: ChangeInvisibleTimeRequestHeader,
    ) -> impl Future<Output = rmq_client_core::Result<ChangeInvisibleTimeResponseHeader>> + Send
    {
        self.change_invisible_time(addr, header)
    }

    fn send_back(
        &self,
        addr: &str,
        header: ConsumerSendMsgBackRequestHeader,
    ) -> impl Future<Output = rmq_client_core::Result<()>> + Send {
        self.consumer_send_back(addr, header)
    }
}
