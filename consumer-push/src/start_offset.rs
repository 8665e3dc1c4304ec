//! Where a newly assigned queue starts (Java
//! `RebalancePushImpl.computePullFromWhereWithException`).

use rmq_protocol::MessageQueue;

use crate::inner::Inner;
use crate::error::Result;

/// The start offset of `mq`: a restart offset recorded by OFFSET_MOVED or
/// a reset; else the stored offset, else the consume-from rule with the
/// group's own retry topic counted as the retry topic
/// ([`rmq_consumer_base::offsets::start_offset`]).
pub(crate) async fn compute(inner: &Inner, mq: &MessageQueue) -> Result<i64> {
    let store = inner.core.offset_store();
    if let Some(offset) = inner.queues.take_pending_offset(mq) {
        store.update_offset(mq, offset, false);
        return Ok(offset);
    }
    rmq_consumer_base::offsets::start_offset(
        inner.core.instance(),
        &**store,
        mq,
        inner.config.consume_from(),
        mq.topic == inner.retry_topic,
    )
    .await
}
