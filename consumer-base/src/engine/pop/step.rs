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

/// Why a pop is tried again later, and so how long the loop waits.
#[derive(Debug)]
pub enum RetryCause {
    /// POLLING_FULL (the broker holds too many polls) or a status this
    /// client does not know: [`PopDelays::exception`].
    Status(PopStatus),
    /// FLOW_CONTROL: [`PopDelays::broker_flow_control`].
    BrokerFlowControl,
    /// Credentials or permissions refused: [`AUTH_FAILURE_BACKOFF`].
    Refused(rmq_client_core::Error),
    /// No broker address, a broker that cannot pop (older than 5.0,
    /// REQUEST_CODE_NOT_SUPPORTED) or any other failure:
    /// [`PopDelays::exception`].
    Failed(FetchError),
}

/// What the pop loop does next.
#[derive(Debug)]
pub enum PopStep {
    /// Messages were found: hand them over, pop again after `after`.
    Found {
        /// The messages (at least one).
        popped: Vec<Popped>,
        /// The pause before the next pop.
        after: Duration,
    },
    /// Nothing within the poll time, or the checks left nothing: pop
    /// again at once.
    Empty,
    /// Pop again once `after` has passed, for `cause`.
    Retry {
        /// How long to wait.
        after: Duration,
        /// Why.
        cause: RetryCause,
    },
    /// The token was cancelled: the loop ends.
    Cancelled,
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
    let (after, cause) = match fetched {
        Ok(answer) => match answer.status {
            PopStatus::Found if answer.popped.is_empty() => return PopStep::Empty,
            PopStatus::Found => {
                return PopStep::Found {
                    popped: answer.popped,
                    after: delays.interval,
                };
            }
            PopStatus::NoNewMsg => return PopStep::Empty,
            PopStatus::PollingFull => {
                debug!("the broker's polls are full; popping later");
                (delays.exception, RetryCause::Status(answer.status))
            }
            other => {
                warn!(status = ?other, "unknown pop status; popping later");
                (delays.exception, RetryCause::Status(other))
            }
        },
        Err(e) => failed(e, delays, quiet),
    };
    PopStep::Retry { after, cause }
}

/// The wait after a failed pop, logged (unless `quiet`; flow control at
/// debug).
fn failed(e: FetchError, delays: PopDelays, quiet: bool) -> (Duration, RetryCause) {
    let (addr, error) = match &e {
        FetchError::NoBroker(error) => ("", error),
        FetchError::Pop { addr, error } => (addr.as_str(), error),
    };
    if error.is_auth() {
        if !quiet {
            warn!(addr, error = %ErrorChain(error), backoff = ?AUTH_FAILURE_BACKOFF, "pop refused: not authenticated or not authorized; backing off");
        }
        let (FetchError::Pop { error, .. } | FetchError::NoBroker(error)) = e;
        return (AUTH_FAILURE_BACKOFF, RetryCause::Refused(error));
    }
    if error.response_code() == Some(ResponseCode::FLOW_CONTROL) {
        debug!(addr, error = %ErrorChain(error), "broker flow control");
        return (delays.broker_flow_control, RetryCause::BrokerFlowControl);
    }
    if is_pop_unsupported(error) {
        warn!(
            addr,
            "the broker does not pop (RocketMQ 5 needed); popping later"
        );
    } else if !quiet {
        warn!(addr, error = %ErrorChain(error), "pop failed; popping later");
    }
    (delays.exception, RetryCause::Failed(e))
}
