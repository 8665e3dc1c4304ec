//! One turn of a queue's pull loop: [`PullCursor::step`] pulls and decides
//! what comes next, as Java's `DefaultMQPushConsumerImpl.pullMessage`
//! callback and `DefaultLitePullConsumerImpl.PullTaskImpl` do: use what
//! was found, pull again at once, start again from the broker's offset, or
//! wait (broker flow control, an unknown subscription, a refused
//! credential, any other failure).

use std::time::Duration;

use rmq_client_core::{AUTH_FAILURE_BACKOFF, PullStatus};
use rmq_protocol::{ErrorChain, ResponseCode};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::fetch::{Answer, FetchError, Fetched, PullCursor, PullQuery};
use super::wire::PullWire;

/// The waits a consumer configures for its pulls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PullDelays {
    /// After a failed pull (Java `pullTimeDelayMillsWhenException`).
    pub exception: Duration,
    /// After the broker answered FLOW_CONTROL (Java
    /// `PULL_TIME_DELAY_MILLS_WHEN_BROKER_FLOW_CONTROL`, 20 ms in both
    /// `DefaultMQPushConsumerImpl` and `DefaultLitePullConsumerImpl`).
    pub broker_flow_control: Duration,
}

/// What the queue's loop does next.
#[derive(Debug)]
pub enum Step {
    /// FOUND: keep the messages (the filter may have left none) and pull
    /// from [`Answer::next_begin_offset`].
    Found(Fetched),
    /// NO_NEW_MSG or NO_MATCHED_MSG: pull again at once from
    /// [`Answer::next_begin_offset`].
    Empty(Answer),
    /// OFFSET_ILLEGAL: the offset was deleted, is beyond the end or was
    /// reset; the broker's offset is [`Answer::next_begin_offset`]. The push
    /// consumer drops and recreates the queue there, the lite consumer
    /// pulls on from it.
    OffsetIllegal(Answer),
    /// Pull again from the same offset after `after`.
    Retry {
        /// How long to wait.
        after: Duration,
        /// Why.
        cause: RetryCause,
    },
    /// The token was cancelled: the loop ends.
    Cancelled,
}

/// Why a pull is tried again later.
#[derive(Debug)]
pub enum RetryCause {
    /// No address of the queue's broker, even after a route refresh:
    /// [`PullDelays::exception`].
    NoBroker(rmq_client_core::Error),
    /// The broker answered FLOW_CONTROL: [`PullDelays::broker_flow_control`].
    BrokerFlowControl,
    /// SUBSCRIPTION_NOT_EXIST or SUBSCRIPTION_NOT_LATEST: a heartbeat was
    /// sent (the push consumer's subscription reaches the broker by its
    /// heartbeat), then [`PullDelays::exception`].
    SubscriptionUnknown,
    /// The broker refused the credentials or permissions:
    /// [`AUTH_FAILURE_BACKOFF`].
    Refused(rmq_client_core::Error),
    /// Messages were found but cannot be decoded: [`PullDelays::exception`].
    Decode(rmq_client_core::Error),
    /// An answer status this client does not know:
    /// [`PullDelays::exception`].
    Status(Answer),
    /// Any other failure (timeout, closed connection, other broker codes):
    /// [`PullDelays::exception`].
    Failed(rmq_client_core::Error),
}

impl RetryCause {
    /// The client error behind the retry, if there is one.
    pub fn into_error(self) -> Option<rmq_client_core::Error> {
        match self {
            RetryCause::NoBroker(e)
            | RetryCause::Refused(e)
            | RetryCause::Decode(e)
            | RetryCause::Failed(e) => Some(e),
            RetryCause::BrokerFlowControl
            | RetryCause::SubscriptionUnknown
            | RetryCause::Status(_) => None,
        }
    }
}

impl PullCursor {
    /// [`fetch`](Self::fetch), then the next step of the queue's loop.
    /// Cancelling `cancel` ends the pull (and a heartbeat it waits for)
    /// with [`Step::Cancelled`]. Failures are logged here (at warn, unless
    /// cancelled; flow control and an unknown subscription at debug).
    pub async fn step<W: PullWire>(
        &mut self,
        wire: &W,
        query: &PullQuery<'_>,
        delays: PullDelays,
        cancel: &CancellationToken,
    ) -> Step {
        let fetched = tokio::select! {
            r = self.fetch(wire, query) => r,
            () = cancel.cancelled() => return Step::Cancelled,
        };
        let step = decide(fetched, query.spec.offset, delays, cancel.is_cancelled());
        if let Step::Retry {
            cause: RetryCause::SubscriptionUnknown,
            ..
        } = step
        {
            tokio::select! {
                () = wire.heartbeat_now() => {}
                () = cancel.cancelled() => return Step::Cancelled,
            }
        }
        step
    }
}

/// Java's decision on a pull from `offset` that answered or failed as
/// `fetched`; `quiet`: the loop is being cancelled (failures not logged).
fn decide(
    fetched: Result<Fetched, FetchError>,
    offset: i64,
    delays: PullDelays,
    quiet: bool,
) -> Step {
    let failure = match fetched {
        Ok(fetched) => {
            return match fetched.answer.status {
                PullStatus::Found => Step::Found(fetched),
                PullStatus::NoNewMsg | PullStatus::NoMatchedMsg => Step::Empty(fetched.answer),
                PullStatus::OffsetIllegal => Step::OffsetIllegal(fetched.answer),
                other => {
                    warn!(offset, status = ?other, "unknown pull status; retrying later");
                    Step::Retry {
                        after: delays.exception,
                        cause: RetryCause::Status(fetched.answer),
                    }
                }
            };
        }
        Err(e) => e,
    };
    let (after, cause) = match failure {
        FetchError::NoBroker(e) => {
            if !quiet {
                warn!(offset, error = %ErrorChain(&e), "no address for the queue's broker; retrying later");
            }
            (delays.exception, RetryCause::NoBroker(e))
        }
        FetchError::Decode(e) => {
            warn!(offset, error = %ErrorChain(&e), "cannot decode pulled messages; retrying later");
            (delays.exception, RetryCause::Decode(e))
        }
        FetchError::Pull(e) if e.is_auth() => {
            if !quiet {
                warn!(
                    offset,
                    error = %ErrorChain(&e),
                    backoff = ?AUTH_FAILURE_BACKOFF,
                    "pull refused: not authenticated or not authorized; backing off"
                );
            }
            (AUTH_FAILURE_BACKOFF, RetryCause::Refused(e))
        }
        FetchError::Pull(e) => match e.response_code() {
            Some(ResponseCode::FLOW_CONTROL) => {
                debug!(error = %ErrorChain(&e), "broker flow control");
                (delays.broker_flow_control, RetryCause::BrokerFlowControl)
            }
            Some(ResponseCode::SUBSCRIPTION_NOT_EXIST | ResponseCode::SUBSCRIPTION_NOT_LATEST) => {
                debug!(error = %ErrorChain(&e), "the broker does not know the subscription yet; heartbeat");
                (delays.exception, RetryCause::SubscriptionUnknown)
            }
            _ => {
                if !quiet {
                    warn!(offset, error = %ErrorChain(&e), "pull failed; retrying later");
                }
                (delays.exception, RetryCause::Failed(e))
            }
        },
    };
    Step::Retry { after, cause }
}
