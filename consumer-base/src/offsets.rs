//! Queue offsets the consumers ask the broker for: where a newly assigned
//! queue starts (Java `computePullFromWhereWithException`), and a queue's
//! min, max and by-time offsets at its master.

use rmq_client_core::ClientInstance;
use rmq_offset_store::{ConsumeFrom, OffsetStore, ReadOffsetType, StartFallback, start_fallback};
use rmq_protocol::MessageQueue;
use rmq_protocol::header::BoundaryType;

use crate::error::{Error, Kind};

/// Where `mq` starts: its stored offset (broker, file or the application's
/// store), else the `from` rule ([`start_fallback`]: last offset → the max
/// offset, first → 0, timestamp → search; a retry topic starts at 0 or at
/// its max offset). The caller says whether `mq` counts as a retry topic:
/// the push consumer counts its own group's, the lite consumer every
/// `%RETRY%` topic (as the Java consumers do).
///
/// # Errors
///
/// [`Error::StartOffset`] wrapping why the store or the broker could not be
/// asked.
pub async fn start_offset<K: Kind>(
    instance: &ClientInstance,
    store: &dyn OffsetStore,
    mq: &MessageQueue,
    from: ConsumeFrom,
    is_retry_topic: bool,
) -> Result<i64, Error<K>> {
    let stored = store
        .read_offset(mq, ReadOffsetType::ReadFromStore)
        .await
        .map_err(|e| Error::from(e).start_offset(mq))?;
    if let Some(offset) = stored.filter(|o| *o >= 0) {
        return Ok(offset);
    }
    let at = match start_fallback(from, is_retry_topic) {
        StartFallback::At(offset) => return Ok(offset),
        StartFallback::MaxOffset => max_offset(instance, mq).await,
        StartFallback::Search(ms) => search_offset(instance, mq, ms).await,
    };
    at.map_err(|e| e.start_offset(mq))
}

/// The master address of the queue's broker, refreshing the route once
/// when unknown.
///
/// # Errors
///
/// [`Error::BrokerNotFound`].
pub async fn master_addr<K: Kind>(
    instance: &ClientInstance,
    mq: &MessageQueue,
) -> Result<String, Error<K>> {
    instance.master_addr(mq).await.map_err(Error::from_lookup)
}

/// GET_MAX_OFFSET at the queue's master: the offset the next message gets.
///
/// # Errors
///
/// [`Error::BrokerNotFound`], [`Error::Client`].
pub async fn max_offset<K: Kind>(
    instance: &ClientInstance,
    mq: &MessageQueue,
) -> Result<i64, Error<K>> {
    let addr = master_addr(instance, mq).await?;
    Ok(instance
        .get_max_offset(&addr, &mq.topic, mq.queue_id, Some(&mq.broker_name))
        .await?)
}

/// GET_MIN_OFFSET at the queue's master.
///
/// # Errors
///
/// [`Error::BrokerNotFound`], [`Error::Client`].
pub async fn min_offset<K: Kind>(
    instance: &ClientInstance,
    mq: &MessageQueue,
) -> Result<i64, Error<K>> {
    let addr = master_addr(instance, mq).await?;
    Ok(instance
        .get_min_offset(&addr, &mq.topic, mq.queue_id, Some(&mq.broker_name))
        .await?)
}

/// SEARCH_OFFSET_BY_TIMESTAMP (lower boundary) at the queue's master: the
/// offset of the first message stored at or after `timestamp_ms`.
///
/// # Errors
///
/// [`Error::BrokerNotFound`], [`Error::Client`].
pub async fn search_offset<K: Kind>(
    instance: &ClientInstance,
    mq: &MessageQueue,
    timestamp_ms: i64,
) -> Result<i64, Error<K>> {
    let addr = master_addr(instance, mq).await?;
    Ok(instance
        .search_offset(
            &addr,
            &mq.topic,
            mq.queue_id,
            timestamp_ms,
            BoundaryType::Lower,
        )
        .await?)
}
