//! END_TRANSACTION (37): the producer's commit / rollback / unknown of a half
//! message (Java `MQClientAPIImpl.endTransactionOneway`).

use std::time::Duration;

use rmq_protocol::header::EndTransactionRequestHeader;
use rmq_protocol::{RemotingCommand, RequestCode};

use crate::error::Result;
use crate::instance::ClientInstance;

impl ClientInstance {
    /// Sends END_TRANSACTION to the broker at `addr`, oneway (as Java):
    /// resolves once the frame is written; the broker never answers, so a
    /// header it refuses (wrong group, offsets) goes unnoticed and the
    /// broker checks the half message back later. `remark` carries the
    /// local error text, if any (Java puts the exception there).
    ///
    /// # Errors
    ///
    /// [`Error::Remoting`](crate::Error::Remoting) when it could not be
    /// written within `timeout`.
    pub async fn end_transaction_oneway(
        &self,
        addr: &str,
        header: &EndTransactionRequestHeader,
        remark: Option<String>,
        timeout: Duration,
    ) -> Result<()> {
        let mut request = RemotingCommand::request(RequestCode::END_TRANSACTION, header);
        request.remark = remark;
        self.inner
            .remoting
            .invoke_oneway(addr, request, timeout)
            .await?;
        Ok(())
    }
}
