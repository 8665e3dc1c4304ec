//! [`ProducerHandle`]: what the client instance needs from a producer that
//! takes broker → client requests (transaction check-backs).

use rmq_protocol::MessageExt;
use rmq_protocol::header::CheckTransactionStateRequestHeader;

/// A CHECK_TRANSACTION_STATE request as the client instance hands it to the
/// producer of the half message's group (the message's `PGROUP` property).
#[derive(Debug, Clone)]
pub struct TransactionCheckRequest {
    /// Address of the broker that asked; the answer (END_TRANSACTION) goes
    /// there.
    pub broker_addr: String,
    /// The request header (offsets, ids, and on 5.x the broker name).
    pub header: CheckTransactionStateRequestHeader,
    /// The half message, decoded from the request body. Its topic is the
    /// real topic (`REAL_TOPIC`), its `msg_id` the `UNIQ_KEY`.
    pub message: MessageExt,
}

/// A producer registered in a [`ClientInstance`](crate::ClientInstance)
/// with [`register_producer_handle`](crate::ClientInstance::register_producer_handle).
///
/// The instance calls it from the handler of a broker → client request,
/// which runs on a task of the connection: it must be cheap and must not
/// block or await; hand the work to the producer's own (bounded) tasks.
pub trait ProducerHandle: Send + Sync + 'static {
    /// The broker asks for the state of a local transaction
    /// (CHECK_TRANSACTION_STATE, oneway): queue the check; the producer
    /// answers with END_TRANSACTION (`fromTransactionCheck = true`) to
    /// `request.broker_addr`. Dropping the request is allowed (the broker
    /// checks again after `transactionCheckInterval`).
    fn check_transaction_state(&self, request: TransactionCheckRequest);
}
