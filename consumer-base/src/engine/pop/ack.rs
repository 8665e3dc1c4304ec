//! Acks of popped messages: ACK_MESSAGE for a lone message of a broker,
//! BATCH_ACK_MESSAGE (one entry per checkpoint, a bit per message) for
//! more, as the 5.x proxy does; a broker that does not know
//! BATCH_ACK_MESSAGE (before 5.1) gets one ACK_MESSAGE per message.

use std::collections::BTreeMap;

use rmq_client_core::is_pop_unsupported;
use rmq_protocol::MessageQueue;
use rmq_protocol::body::{BatchAck, BatchAckMessageRequestBody};
use rmq_protocol::header::AckMessageRequestHeader;

use super::error::PopCallError;
use super::handle::PopHandle;
use super::wire::PopWire;

/// Acks that did not reach their broker.
#[derive(Debug)]
pub struct AckFailure {
    /// How many messages.
    pub count: usize,
    /// Why.
    pub error: PopCallError,
}

/// Acks `handles` of `group`: one request per broker where the broker
/// takes batches. Answers what failed (those messages come back after
/// their invisible time).
pub async fn ack_all<W: PopWire>(wire: &W, group: &str, handles: &[&PopHandle]) -> Vec<AckFailure> {
    let mut by_broker: BTreeMap<&str, Vec<&PopHandle>> = BTreeMap::new();
    for h in handles {
        by_broker
            .entry(h.ck.broker_name.as_str())
            .or_default()
            .push(h);
    }
    let mut failed = Vec::new();
    for hs in by_broker.into_values() {
        if let Err(error) = ack_broker(wire, group, &hs).await {
            failed.push(AckFailure {
                count: hs.len(),
                error,
            });
        }
    }
    failed
}

/// The acks of one broker's messages.
async fn ack_broker<W: PopWire>(
    wire: &W,
    group: &str,
    hs: &[&PopHandle],
) -> Result<(), PopCallError> {
    let Some(first) = hs.first() else {
        return Ok(());
    };
    let addr = addr_of(wire, first).await?;
    if let [one] = hs {
        return ack_one(wire, group, &addr, one).await;
    }
    let body = batch_body(group, hs)?;
    match wire.batch_ack(&addr, &body).await {
        Ok(()) => Ok(()),
        Err(e) if is_pop_unsupported(&e) => {
            for h in hs {
                ack_one(wire, group, &addr, h).await?;
            }
            Ok(())
        }
        Err(error) => Err(PopCallError::Call { addr, error }),
    }
}

/// ACK_MESSAGE of one message at `addr`.
async fn ack_one<W: PopWire>(
    wire: &W,
    group: &str,
    addr: &str,
    h: &PopHandle,
) -> Result<(), PopCallError> {
    let header = AckMessageRequestHeader {
        consumer_group: group.to_owned(),
        topic: h.ck.real_topic(&h.topic, group),
        queue_id: h.ck.queue_id,
        extra_info: h.ck.to_string(),
        offset: h.ck.queue_offset,
        broker_name: Some(h.ck.broker_name.clone()),
    };
    wire.ack(addr, header)
        .await
        .map_err(|error| PopCallError::Call {
            addr: addr.to_owned(),
            error,
        })
}

/// The master address of the broker that popped `h`.
pub(crate) async fn addr_of<W: PopWire>(wire: &W, h: &PopHandle) -> Result<String, PopCallError> {
    let mq = MessageQueue::new(h.topic.clone(), h.ck.broker_name.clone(), h.ck.queue_id);
    wire.master_addr(&mq).await.map_err(PopCallError::NoBroker)
}

/// The BATCH_ACK_MESSAGE body of `hs` (one broker's): one entry per
/// checkpoint, a bit per message (its offset after the checkpoint's).
pub fn batch_body(
    group: &str,
    hs: &[&PopHandle],
) -> Result<BatchAckMessageRequestBody, PopCallError> {
    type CkKey<'a> = (&'a str, &'a str, i32, i64, i64, i64, i32);
    let mut acks: BTreeMap<CkKey<'_>, BatchAck> = BTreeMap::new();
    let mut broker = String::new();
    for h in hs {
        let ck = &h.ck;
        let bit = u32::try_from(ck.queue_offset - ck.ck_queue_offset).map_err(|_| {
            PopCallError::BeforeCheckpoint {
                offset: ck.queue_offset,
                ck_offset: ck.ck_queue_offset,
            }
        })?;
        if broker.is_empty() {
            ck.broker_name.clone_into(&mut broker);
        }
        let key = (
            h.topic.as_str(),
            ck.retry.as_str(),
            ck.queue_id,
            ck.ck_queue_offset,
            ck.pop_time,
            ck.invisible_time,
            ck.revive_qid,
        );
        acks.entry(key)
            .or_insert_with(|| BatchAck {
                consumer_group: group.to_owned(),
                topic: h.topic.clone(),
                retry: ck.retry.as_str().to_owned(),
                start_offset: ck.ck_queue_offset,
                queue_id: ck.queue_id,
                revive_queue_id: ck.revive_qid,
                pop_time: ck.pop_time,
                invisible_time: ck.invisible_time,
                bit_set: Default::default(),
            })
            .bit_set
            .insert(bit);
    }
    Ok(BatchAckMessageRequestBody {
        broker_name: broker,
        acks: acks.into_values().collect(),
    })
}
