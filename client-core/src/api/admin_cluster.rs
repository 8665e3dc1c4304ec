//! Name-server admin calls and broker runtime info:
//! GET_BROKER_CLUSTER_INFO, GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
//! DELETE_TOPIC_IN_NAMESRV, GET_BROKER_RUNTIME_INFO; and
//! [`ClientInstance::invoke_namesrv`], the name-server failover they (and
//! the route query) share.

use std::sync::atomic::Ordering;

use rmq_protocol::body::{ClusterInfo, KvTable, TopicList};
use rmq_protocol::header::{DeleteTopicFromNamesrvRequestHeader, EmptyHeader};
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use tracing::warn;

use crate::error::{Error, Result};
use crate::instance::ClientInstance;

impl ClientInstance {
    /// Sends `request` to the name servers in turn, starting with the one
    /// that answered last, and returns the first answer whose code is in
    /// `accepted` (that server is then remembered). Other answers (e.g.
    /// SYSTEM_ERROR "name server not ready") and transport failures move on
    /// to the next server. Timeout per server: the config's request timeout.
    ///
    /// # Errors
    ///
    /// [`Error::NameServerUnavailable`] when no server gave an accepted
    /// answer; its source is the last failure.
    pub async fn invoke_namesrv(
        &self,
        request: RemotingCommand,
        accepted: &[ResponseCode],
    ) -> Result<RemotingCommand> {
        let addrs = self.inner.config.namesrv_addrs();
        let count = addrs.len();
        let start = self.inner.namesrv_index.load(Ordering::Relaxed);
        let timeout = self.inner.config.request_timeout();
        let code = request.request_code();
        let mut last_error = None;
        for i in 0..count {
            let index = start.wrapping_add(i) % count.max(1);
            let Some(addr) = addrs.get(index) else {
                continue;
            };
            match self
                .inner
                .remoting
                .invoke(addr, request.clone(), timeout)
                .await
            {
                Ok(response) if accepted.contains(&response.response_code()) => {
                    self.inner.namesrv_index.store(index, Ordering::Relaxed);
                    self.inner.links.name_server(None);
                    return Ok(response);
                }
                Ok(response) => {
                    let e = Error::broker(addr, code, &response);
                    warn!(addr, ?code, error = %rmq_protocol::ErrorChain(&e), "name server refused the request, trying the next");
                    last_error = Some(e);
                }
                Err(e) => {
                    warn!(addr, ?code, error = %rmq_protocol::ErrorChain(&e), "name server unreachable, trying the next");
                    last_error = Some(e.into());
                }
            }
        }
        let e = Error::NameServerUnavailable {
            addrs: addrs.to_vec(),
            source: last_error.map(Box::new),
        };
        self.inner
            .links
            .name_server(Some(rmq_protocol::ErrorChain(&e).to_string()));
        Err(e)
    }

    /// Sends `request` to the broker at `addr` and returns the answer when
    /// it is SUCCESS. Timeout: the config's request timeout.
    ///
    /// # Errors
    ///
    /// [`Error::Broker`] for another code, [`Error::Remoting`] when the call
    /// failed.
    pub(crate) async fn invoke_ok(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<RemotingCommand> {
        let timeout = self.inner.config.request_timeout();
        Ok(self
            .inner
            .remoting
            .invoke_expect(addr, request, timeout, &[ResponseCode::SUCCESS])
            .await?)
    }

    /// The clusters and brokers the name servers know
    /// (GET_BROKER_CLUSTER_INFO).
    ///
    /// # Errors
    ///
    /// As [`invoke_namesrv`](ClientInstance::invoke_namesrv), plus
    /// [`Error::Protocol`] for a malformed body.
    pub async fn get_broker_cluster_info(&self) -> Result<ClusterInfo> {
        let request = RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO, &EmptyHeader);
        let response = self
            .invoke_namesrv(request, &[ResponseCode::SUCCESS])
            .await?;
        Ok(ClusterInfo::decode(&response.body)?)
    }

    /// Every topic a name server knows, system topics included
    /// (GET_ALL_TOPIC_LIST_FROM_NAMESERVER).
    ///
    /// # Errors
    ///
    /// As [`get_broker_cluster_info`](ClientInstance::get_broker_cluster_info).
    pub async fn get_all_topic_list(&self) -> Result<TopicList> {
        let request = RemotingCommand::request(
            RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
            &EmptyHeader,
        );
        let response = self
            .invoke_namesrv(request, &[ResponseCode::SUCCESS])
            .await?;
        Ok(TopicList::decode(&response.body)?)
    }

    /// Removes `topic` from the route table of every configured name server
    /// (DELETE_TOPIC_IN_NAMESRV; Java deletes on all of them too), only the
    /// entries of `cluster` when given. Delete it on the brokers first
    /// ([`delete_topic_in_broker`](ClientInstance::delete_topic_in_broker)),
    /// or their next registration brings it back.
    ///
    /// # Errors
    ///
    /// [`Error::Broker`] / [`Error::Remoting`] of the first name server that
    /// failed (the others were still asked).
    pub async fn delete_topic_in_namesrv(&self, topic: &str, cluster: Option<&str>) -> Result<()> {
        let header = DeleteTopicFromNamesrvRequestHeader {
            topic: topic.to_owned(),
            cluster_name: cluster.map(str::to_owned),
        };
        let timeout = self.inner.config.request_timeout();
        let mut first_error = None;
        for addr in self.inner.config.namesrv_addrs() {
            let request = RemotingCommand::request(RequestCode::DELETE_TOPIC_IN_NAMESRV, &header);
            if let Err(e) = self
                .inner
                .remoting
                .invoke_expect(addr, request, timeout, &[ResponseCode::SUCCESS])
                .await
            {
                first_error.get_or_insert(Error::from(e));
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The runtime information of the broker at `addr`
    /// (GET_BROKER_RUNTIME_INFO): `brokerVersionDesc`, `putTps`,
    /// `msgPutTotalTodayNow`, ... as strings.
    ///
    /// # Errors
    ///
    /// [`Error::Broker`] when the broker refuses, [`Error::Remoting`] when
    /// the call failed, [`Error::Protocol`] for a malformed body.
    pub async fn get_broker_runtime_info(&self, addr: &str) -> Result<KvTable> {
        let request = RemotingCommand::request(RequestCode::GET_BROKER_RUNTIME_INFO, &EmptyHeader);
        let response = self.invoke_ok(addr, request).await?;
        Ok(KvTable::decode(&response.body)?)
    }
}
