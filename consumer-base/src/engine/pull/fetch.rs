//! One pull, errors returned: [`PullCursor::fetch`] finds the broker (with
//! the broker id the last answer suggested), fills the request header,
//! sends PULL_MESSAGE, decodes and filters what came (Java
//! `PullAPIWrapper.pullKernelImpl` and `processPullResult`).

use std::time::Duration;

use rmq_client_core::PullStatus;
use rmq_protocol::body::SubscriptionData;
use rmq_protocol::header::PullMessageRequestHeader;
use rmq_protocol::namespace::Namespace;
use rmq_protocol::{MessageExt, MessageQueue};
use tokio::time::Instant;
use tracing::trace;

use super::filter::filter_pulled;
use super::header::{PullSpec, fill_pull_header};
use super::wire::PullWire;
use crate::error::{Error, Kind};
use crate::heartbeat::HeartbeatGate;

/// What one pull asks for; borrowed from the consumer, nothing copied.
#[derive(Debug, Clone, Copy)]
pub struct PullQuery<'a> {
    /// The consumer group.
    pub group: &'a str,
    /// The queue.
    pub mq: &'a MessageQueue,
    /// The subscription: sent in the request or named by version
    /// ([`PullSpec::subscription`]), and the client-side tag re-check.
    pub sub: &'a SubscriptionData,
    /// Offset, size, hold, commit offset, flags. Its `commit` is dropped
    /// when the address found is a slave's (Java
    /// `PullSysFlag.clearCommitOffsetFlag`).
    pub spec: PullSpec,
    /// Messages read from this retry topic get their original topic back
    /// ([`restore_retry_topic`](super::restore_retry_topic)): the push
    /// consumer's own `%RETRY%<group>`; `None` keeps them as read.
    pub retry_topic: Option<&'a str>,
    /// The messages' topics leave this namespace (Java
    /// `resetRetryAndNamespace`).
    pub namespace: &'a Namespace,
    /// The call's timeout; `None`: the broker's hold plus the usual
    /// overhead.
    pub timeout: Option<Duration>,
    /// A heartbeat before the first pull from each broker (the pull
    /// consumers, whose subscription is not in a heartbeat of theirs).
    pub gate: Option<&'a HeartbeatGate>,
}

/// The broker's answer to a pull, without its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// What was found.
    pub status: PullStatus,
    /// Where the next pull starts.
    pub next_begin_offset: i64,
    /// The queue's min offset.
    pub min_offset: i64,
    /// The queue's max offset.
    pub max_offset: i64,
    /// How long the PULL_MESSAGE call took (lookup not included).
    pub took: Duration,
}

/// A pull's answer with its messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// Status, offsets and round trip.
    pub answer: Answer,
    /// The messages the filter kept (empty unless [`PullStatus::Found`]).
    pub messages: Vec<MessageExt>,
    /// How many messages the broker sent, before the filter.
    pub pulled: usize,
}

/// Why a pull brought no answer.
#[derive(Debug)]
pub enum FetchError {
    /// No address of the queue's broker, even after a route refresh.
    NoBroker(rmq_client_core::Error),
    /// The call failed, or the broker answered with an error code
    /// (FLOW_CONTROL, SUBSCRIPTION_NOT_LATEST, a refused credential, ...).
    Pull(rmq_client_core::Error),
    /// The broker found messages that could not be decoded.
    Decode(rmq_client_core::Error),
}

impl FetchError {
    /// The client error, whichever step failed.
    pub fn into_inner(self) -> rmq_client_core::Error {
        match self {
            FetchError::NoBroker(e) | FetchError::Pull(e) | FetchError::Decode(e) => e,
        }
    }
}

impl<K: Kind> From<FetchError> for Error<K> {
    /// An unknown broker is [`Error::BrokerNotFound`], anything else
    /// [`Error::Client`].
    fn from(e: FetchError) -> Self {
        match e {
            FetchError::NoBroker(e) => Error::from_lookup(e),
            FetchError::Pull(e) | FetchError::Decode(e) => Error::Client(e),
        }
    }
}

/// What a queue's pulls keep from one to the next: the broker id the last
/// answer suggested (Java `PullAPIWrapper.pullFromWhichNodeTable`; 0, the
/// master, at first) and the last request header, refilled by the next
/// pull, so that a loop pulling one queue allocates no header per pull.
#[derive(Debug, Default)]
pub struct PullCursor {
    broker_id: i64,
    header: PullMessageRequestHeader,
}

impl PullCursor {
    /// A cursor whose first pull goes to `broker_id` (an id a previous
    /// answer suggested).
    pub fn at_broker(broker_id: i64) -> PullCursor {
        PullCursor {
            broker_id,
            ..PullCursor::default()
        }
    }

    /// The broker id the last answer suggested: where the next pull goes.
    pub fn broker_id(&self) -> i64 {
        self.broker_id
    }

    /// One pull of `query` through `wire`: the address (suggested broker
    /// id), the heartbeat of [`PullQuery::gate`], PULL_MESSAGE, then the
    /// messages decoded and filtered. Every answer's suggested broker id is
    /// kept for the next pull, also when its messages cannot be decoded.
    ///
    /// # Errors
    ///
    /// [`FetchError`]: which step failed, with the client error.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the request (the broker may still hold
    /// it until its suspend time); the cursor stays usable.
    pub async fn fetch<W: PullWire>(
        &mut self,
        wire: &W,
        query: &PullQuery<'_>,
    ) -> Result<Fetched, FetchError> {
        let (addr, is_slave) = wire
            .pull_addr(query.mq, self.broker_id)
            .await
            .map_err(FetchError::NoBroker)?;
        if let Some(gate) = query.gate {
            wire.heartbeat_once(gate, &addr).await;
        }
        let spec = PullSpec {
            commit: query.spec.commit && !is_slave,
            ..query.spec
        };
        fill_pull_header(&mut self.header, query.group, query.mq, query.sub, spec);
        trace!(offset = spec.offset, max = spec.max, addr, "pull");
        let started = Instant::now();
        let result = wire
            .pull(&addr, &self.header, query.timeout)
            .await
            .map_err(FetchError::Pull)?;
        let answer = Answer {
            status: result.status,
            next_begin_offset: result.next_begin_offset,
            min_offset: result.min_offset,
            max_offset: result.max_offset,
            took: started.elapsed(),
        };
        self.broker_id = result.suggest_which_broker_id;
        let mut messages = result
            .decode_messages(query.mq)
            .map_err(FetchError::Decode)?;
        let pulled = messages.len();
        filter_pulled(&mut messages, query.sub, query.retry_topic, query.namespace);
        Ok(Fetched {
            answer,
            messages,
            pulled,
        })
    }
}
