//! One turn of a pop loop: [`PopCursor::step`] pops and decides what comes
//! next, as Java's `DefaultMQPushConsumerImpl.popMessage` callback does:
//! hand over what was found (then pop again after the pull interval), pop
//! again at once (nothing found), or wait (the broker's polls full, broker
//! flow control, a refused credential, a broker that cannot pop, any other
//! failure).

use std::time::Duration;

use rmq_client_core::{AUTH_FAILURE_BACKOFF, PopStatus, is_pop_unsupported};
use rmq_protocol::{ErrorChain, ResponseCode};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::fetch::{FetchError, PopAnswer, PopCursor};
use super::handle::Popped;
use super::request::PopQuery;
use super::wire::PopWire;

/// The waits a consumer configures for its pops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PopDelays {
    /// After messages were found (Java `pullInterval`).
    pub interval: Duration,
    /// After a failed pop or POLLING_FULL (Java
    /// `pullTimeDelayMillsWhenException`).
    pub exception: Duration,
    /// After the broker answered FLOW_CONTROL (Java
    /// `PULL_TIME_DELAY_MILLS_WHEN_BROKER_FLOW_CONTROL`).
    pub broker_flow_control: Duration,
}

/// What the pop loop does next.
#[derive(Debug)]
pub enum PopStep {
    /// Messages were found (the checks may have left none): hand them over
    /// and pop again after `after`.
    Found {
        /// The messages.
        popped: Vec<Popped>,
        /// The pause before the next pop.
        after: Duration,
    },
    /// Nothing within the poll time: pop again at once.
    Empty,
    /// Pop again after `after`.
    Retry {
        /// How long to wait.
        after: Duration,
        /// Why.
        cause: RetryCause,
    },
    /// The token was cancelled: the loop ends.
    Cancelled,
}

/// Why a pop is tried again later.
#[derive(Debug)]
pub enum RetryCause {
    /// No address of the broker: [`PopDelays::exception`].
    NoBroker(rmq_client_core::Error),
    /// POLLING_FULL: the broker holds too many polls;
    /// [`PopDelays::exception`].
    PollingFull,
    /// FLOW_CONTROL: [`PopDelays::broker_flow_control`].
    BrokerFlowControl,
    /// The broker refused the credentials or permissions:
    /// [`AUTH_FAILURE_BACKOFF`].
    Refused(rmq_client_core::Error),
    /// The broker cannot pop (older than 5.0): [`PopDelays::exception`].
    Unsupported(rmq_client_core::Error),
    /// An answer status this client does not know:
    /// [`PopDelays::exception`].
    Status(PopStatus),
    /// Any other failure: [`PopDelays::exception`].
    Failed(rmq_client_core::Error),
}

impl PopCursor {
    /// [`fetch`](Self::fetch), then the next step of the loop. Cancelling
    /// `cancel` ends the pop with [`PopStep::Cancelled`]. Failures are
    /// logged here (at warn, unless cancelled; flow control at debug).
    pub async fn step<W: PopWire>(
        &mut self,
        wire: &W,
        q: &PopQuery<'_>,
        delays: PopDelays,
        cancel: &CancellationToken,
    ) -> PopStep {
        let fetched = tokio::select! {
            r = self.fetch(wire, q) => r,
            () = cancel.cancelled() => return PopStep::Cancelled,
        };
        decide(fetched, delays, cancel.is_cancelled())
    }
}

/// Java's decision on a pop that answered or failed as `fetched`;
/// `quiet`: the loop is being cancelled (failures not logged).
pub(crate) fn decide(
    fetched: Result<PopAnswer, FetchError>,
    delays: PopDelays,
    quiet: bool,
) -> PopStep {
    let (addr, error) = match fetched {
        Ok(answer) => {
            return match answer.status {
                PopStatus::Found if answer.popped.is_empty() => PopStep::Empty,
                PopStatus::Found => PopStep::Found {
                    popped: answer.popped,
                    after: delays.interval,
                },
                PopStatus::NoNewMsg => PopStep::Empty,
                PopStatus::PollingFull => {
                    debug!("the broker's polls are full; popping later");
                    PopStep::Retry {
                        after: delays.exception,
                        cause: RetryCause::PollingFull,
                    }
                }
                other => {
                    warn!(status = ?other, "unknown pop status; popping later");
                    PopStep::Retry {
                        after: delays.exception,
                        cause: RetryCause::Status(other),
                    }
                }
            };
        }
        Err(FetchError::NoBroker(e)) => {
            if !quiet {
                warn!(error = %ErrorChain(&e), "no address for the broker; popping later");
            }
            return PopStep::Retry {
                after: delays.exception,
                cause: RetryCause::NoBroker(e),
            };
        }
        Err(FetchError::Pop { addr, error }) => (addr, error),
    };
    let (after, cause) = if error.is_auth() {
        if !quiet {
            warn!(addr, error = %ErrorChain(&error), backoff = ?AUTH_FAILURE_BACKOFF, "pop refused: not authenticated or not authorized; backing off");
        }
        (AUTH_FAILURE_BACKOFF, RetryCause::Refused(error))
    } else if is_pop_unsupported(&error) {
        warn!(
            addr,
            "the broker does not pop (RocketMQ 5 needed); popping later"
        );
        (delays.exception, RetryCause::Unsupported(error))
    } else if error.response_code() == Some(ResponseCode::FLOW_CONTROL) {
        debug!(addr, error = %ErrorChain(&error), "broker flow control");
        (delays.broker_flow_control, RetryCause::BrokerFlowControl)
    } else {
        if !quiet {
            warn!(addr, error = %ErrorChain(&error), "pop failed; popping later");
        }
        (delays.exception, RetryCause::Failed(error))
    };
    PopStep::Retry { after, cause }
}
