//! [`RecallError`]: why a recall was refused, and the broker's (or the
//! proxy's) words that name each refusal.

use rmq_protocol::message::RecallHandle;

/// Why a recall was refused (inside [`Error::Recall`](crate::Error::Recall)).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecallError {
    /// The handle is not a recall handle (checked before sending; the
    /// broker answers `recall handle is invalid` too).
    #[error("{reason}")]
    InvalidHandle {
        /// The handle given.
        handle: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The handle is of a message of another topic.
    #[error("the handle is of a message of topic {handle_topic:?}, not of {topic:?}")]
    TopicMismatch {
        /// The topic given.
        topic: String,
        /// The handle's topic.
        handle_topic: String,
    },
    /// The message's delivery time has passed: it was delivered (or is
    /// being delivered) and cannot be recalled any more (the broker's
    /// `recall failed, timestamp invalid`).
    #[error("the message's delivery time has passed: it was delivered already ({remark})")]
    Delivered {
        /// The broker's words.
        remark: String,
    },
    /// Recall is turned off on the broker (its `recallMessageEnable`,
    /// false by default; `recall failed, operation is forbidden`).
    #[error(
        "recall is turned off on the broker ({remark}); set recallMessageEnable=true in its \
         broker.conf (or mqadmin updateBrokerConfig -k recallMessageEnable -v true)"
    )]
    Disabled {
        /// The broker's words.
        remark: String,
    },
    /// The proxy recalls only from topics of type `DELAY` (its answer
    /// `MESSAGE_PROPERTY_CONFLICT_WITH_TYPE`).
    #[error(
        "the proxy recalls messages of DELAY topics only, and topic {topic:?} is not one \
         ({remark})"
    )]
    NotDelayTopic {
        /// The topic.
        topic: String,
        /// The proxy's words.
        remark: String,
    },
}

impl RecallError {
    /// The error's kind.
    pub(crate) fn kind(&self) -> rmq_error::ErrorKind {
        use rmq_error::ErrorKind as K;
        match self {
            RecallError::InvalidHandle { .. }
            | RecallError::TopicMismatch { .. }
            | RecallError::NotDelayTopic { .. } => K::InvalidArgument,
            RecallError::Delivered { .. } => K::Broker,
            RecallError::Disabled { .. } => K::Unsupported,
        }
    }

    /// The refusal a broker's (or the proxy's) words name, if they name one.
    pub(super) fn from_remark(
        remark: &str,
        topic: &str,
        handle: &RecallHandle,
    ) -> Option<RecallError> {
        let remark_owned = || remark.to_owned();
        if remark.contains("timestamp invalid") {
            Some(RecallError::Delivered {
                remark: remark_owned(),
            })
        } else if remark.contains("operation is forbidden") {
            Some(RecallError::Disabled {
                remark: remark_owned(),
            })
        } else if remark.contains("topic not match") {
            Some(RecallError::TopicMismatch {
                topic: topic.to_owned(),
                handle_topic: handle.topic.clone(),
            })
        } else if remark.contains("recall handle is invalid") {
            Some(RecallError::InvalidHandle {
                handle: handle.encode(),
                reason: remark_owned(),
            })
        } else {
            None
        }
    }
}
