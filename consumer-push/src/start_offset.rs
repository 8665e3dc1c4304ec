//! Where a newly assigned queue starts (Java
//! `RebalancePushImpl.computePullFromWhereWithException`).

use rmq_client_core::ClientInstance;
use rmq_offset_store::{ReadOffsetType, start_fallback};
use rmq_protocol::MessageQueue;
use rmq_protocol::header::BoundaryType;

use crate::config::ConsumeFrom;
use crate::consumer::Inner;
use crate::error::{Error, Result};

/// What to ask the broker when the store has no offset.
pub(crate) use rmq_offset_store::StartFallback as Fallback;

/// The Java rules for a queue the store has no offset for; the caller says
/// whether `mq` is the group's own retry topic.
pub(crate) fn fallback(from: ConsumeFrom, is_retry_topic: bool) -> Fallback {
    start_fallback(from, is_retry_topic)
}

/// The start offset of `mq`: a restart offset recorded by OFFSET_MOVED or
/// a reset; else the stored offset (broker or file); else
/// [`fallback`].
pub(crate) async fn compute(inner: &Inner, mq: &MessageQueue) -> Result<i64> {
    if let Some(offset) = inner.take_pending_offset(mq) {
        inner.offset_store.update_offset(mq, offset, false);
        return Ok(offset);
    }
    let wrap = |e: Error| Error::StartOffset {
        queue: mq.clone(),
        source: Box::new(e),
    };
    let stored = inner
        .offset_store
        .read_offset(mq, ReadOffsetType::ReadFromStore)
        .await
        .map_err(|e| wrap(e.into()))?;
    if let Some(offset) = stored.filter(|o| *o >= 0) {
        return Ok(offset);
    }
    let is_retry = mq.topic == inner.retry_topic;
    match fallback(inner.config.consume_from, is_retry) {
        Fallback::At(offset) => Ok(offset),
        Fallback::MaxOffset => max_offset(&inner.instance, mq).await.map_err(wrap),
        Fallback::Search(ms) => search_offset(&inner.instance, mq, ms).await.map_err(wrap),
    }
}

/// The master address of the queue's broker, refreshing the route once.
async fn master_addr(instance: &ClientInstance, mq: &MessageQueue) -> Result<String> {
    instance.master_addr(mq).await.map_err(|e| match e {
        rmq_client_core::Error::BrokerNotFound { broker_name } => {
            Error::BrokerNotFound { broker_name }
        }
        e => e.into(),
    })
}

async fn max_offset(instance: &ClientInstance, mq: &MessageQueue) -> Result<i64> {
    let addr = master_addr(instance, mq).await?;
    Ok(instance
        .get_max_offset(&addr, &mq.topic, mq.queue_id, Some(&mq.broker_name))
        .await?)
}

async fn search_offset(instance: &ClientInstance, mq: &MessageQueue, ms: i64) -> Result<i64> {
    let addr = master_addr(instance, mq).await?;
    Ok(instance
        .search_offset(&addr, &mq.topic, mq.queue_id, ms, BoundaryType::Lower)
        .await?)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;

    #[test]
    fn java_rules() {
        assert_eq!(
            fallback(ConsumeFrom::LastOffset, false),
            Fallback::MaxOffset
        );
        assert_eq!(fallback(ConsumeFrom::LastOffset, true), Fallback::At(0));
        assert_eq!(fallback(ConsumeFrom::FirstOffset, false), Fallback::At(0));
        assert_eq!(fallback(ConsumeFrom::FirstOffset, true), Fallback::At(0));
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(
            fallback(ConsumeFrom::Timestamp(t), false),
            Fallback::Search(1_700_000_000_123)
        );
        assert_eq!(
            fallback(ConsumeFrom::Timestamp(t), true),
            Fallback::MaxOffset
        );
    }
}
