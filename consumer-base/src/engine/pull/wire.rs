//! [`PullWire`]: the calls the pull engine makes, so that its decisions can
//! be driven by a scripted double in tests; [`ClientInstance`] is the real
//! one.

use std::future::Future;
use std::time::Duration;

use rmq_client_core::{ClientInstance, PullResult};
use rmq_protocol::MessageQueue;
use rmq_protocol::header::PullMessageRequestHeader;

use crate::heartbeat::HeartbeatGate;

/// What the pull engine asks of the network.
pub trait PullWire: Sync {
    /// The address to pull `mq` from and whether it is a slave: the node
    /// `broker_id` (the id the last answer suggested), else another node of
    /// the broker, refreshing the topic's route once when the broker is
    /// unknown (Java `PullAPIWrapper.pullKernelImpl`:
    /// `findBrokerAddressInSubscribe`, then `updateTopicRouteInfoFromNameServer`
    /// and a second look).
    fn pull_addr(
        &self,
        mq: &MessageQueue,
        broker_id: i64,
    ) -> impl Future<Output = rmq_client_core::Result<(String, bool)>> + Send;

    /// PULL_MESSAGE (or LITE_PULL_MESSAGE, by the header's sysFlag) to
    /// `addr`; `timeout` `None` means the broker's hold plus the usual
    /// overhead.
    fn pull(
        &self,
        addr: &str,
        header: &PullMessageRequestHeader,
        timeout: Option<Duration>,
    ) -> impl Future<Output = rmq_client_core::Result<PullResult>> + Send;

    /// A heartbeat to every broker now (the broker does not know the
    /// group's subscription yet).
    fn heartbeat_now(&self) -> impl Future<Output = ()> + Send;

    /// A heartbeat now unless `gate` has already let one reach `addr`.
    fn heartbeat_once(&self, gate: &HeartbeatGate, addr: &str) -> impl Future<Output = ()> + Send;
}

impl PullWire for ClientInstance {
    fn pull_addr(
        &self,
        mq: &MessageQueue,
        broker_id: i64,
    ) -> impl Future<Output = rmq_client_core::Result<(String, bool)>> + Send {
        self.subscribe_addr(mq, broker_id, false)
    }

    fn pull(
        &self,
        addr: &str,
        header: &PullMessageRequestHeader,
        timeout: Option<Duration>,
    ) -> impl Future<Output = rmq_client_core::Result<PullResult>> + Send {
        self.pull_message(addr, header, timeout)
    }

    fn heartbeat_now(&self) -> impl Future<Output = ()> + Send {
        self.send_heartbeat_now()
    }

    async fn heartbeat_once(&self, gate: &HeartbeatGate, addr: &str) {
        gate.ensure(self, addr).await;
    }
}
