//! [`PopCursor::fetch`]: one pop with its errors returned: the broker's
//! address, the request ([`pop_header`]), POP_MESSAGE through a
//! [`PopWire`], the decode ([`decode`]), the acks of what the tag check
//! dropped and the DLQ for messages redelivered too often.

use rmq_client_core::{PopStatus, now_ms};
use tracing::warn;

use super::ack::ack_all;
use super::handle::{Popped, decode};
use super::request::{PopQuery, pop_header};
use super::settle::to_dlq;
use super::wire::PopWire;

/// What one pop keeps from call to call: the attempt id of an orderly pop
/// that got no answer, sent again so that the broker answers the messages
/// it popped for it at once instead of keeping their queues blocked.
#[derive(Debug, Default)]
pub struct PopCursor {
    attempt_id: Option<String>,
    attempts: u64,
}

/// A pop's answer.
#[derive(Debug)]
pub struct PopAnswer {
    /// What the broker found.
    pub status: PopStatus,
    /// The messages for the consumer (FOUND; the checks may have left
    /// none).
    pub popped: Vec<Popped>,
}

/// Why a pop failed.
#[derive(Debug)]
pub enum FetchError {
    /// No address of the broker, even after a route refresh.
    NoBroker(rmq_client_core::Error),
    /// POP_MESSAGE to `addr` failed or was refused.
    Pop {
        /// The broker's address.
        addr: String,
        /// What failed.
        error: rmq_client_core::Error,
    },
}

impl PopCursor {
    /// A cursor without an attempt in flight.
    pub fn new() -> Self {
        PopCursor::default()
    }

    /// One pop of `q`.
    ///
    /// # Errors
    ///
    /// [`FetchError`].
    pub async fn fetch<W: PopWire>(
        &mut self,
        wire: &W,
        q: &PopQuery<'_>,
    ) -> Result<PopAnswer, FetchError> {
        let addr = wire.master_addr(q.mq).await.map_err(FetchError::NoBroker)?;
        let attempt_id = q.order.then(|| {
            let attempts = &mut self.attempts;
            self.attempt_id
                .get_or_insert_with(|| {
                    *attempts = attempts.wrapping_add(1);
                    format!("{}-{}-{}", q.client_id, now_ms(), attempts)
                })
                .clone()
        });
        let popped = wire
            .pop(&addr, &q.mq.broker_name, pop_header(q, attempt_id), None)
            .await;
        // An answer (even a refusal) ends the attempt; a lost one is tried
        // again with the same id.
        if popped
            .as_ref()
            .map_or_else(|e| e.response_code().is_some(), |_| true)
        {
            self.attempt_id = None;
        }
        let result = popped.map_err(|error| FetchError::Pop { addr, error })?;
        let decoded = decode(result.messages, q.group, &q.mq.topic, q.filter);
        if !decoded.filtered.is_empty() {
            let filtered: Vec<_> = decoded.filtered.iter().collect();
            for failed in ack_all(wire, q.group, &filtered).await {
                warn!(count = failed.count, error = %failed.error, "ack of messages the tag check dropped failed; they come back");
            }
        }
        let mut popped = decoded.kept;
        if let Some(max) = q.dlq_after {
            let mut kept = Vec::with_capacity(popped.len());
            for p in popped {
                if p.msg.reconsume_times > max {
                    to_dlq(wire, q.group, max, &p.msg, &p.handle).await;
                } else {
                    kept.push(p);
                }
            }
            popped = kept;
        }
        if !q.namespace.is_none() {
            for p in &mut popped {
                q.namespace.unwrap_in_place(&mut p.msg.message.topic);
            }
        }
        Ok(PopAnswer {
            status: result.status,
            popped,
        })
    }
}
