//! The push consumer's error type: the consumers' shared [`Error`] of the
//! push consumer kind.

/// The push consumer kind of [`rmq_consumer_base::Error`]; never
/// constructed.
#[derive(Debug)]
pub enum PushConsumerKind {}

impl rmq_consumer_base::Kind for PushConsumerKind {
    const NAME: &'static str = "push consumer";
}

/// Errors of the push consumer (the variants are
/// [`rmq_consumer_base::Error`]'s): what the public methods' [`rmq_error::Error`]
/// wraps (`e.downcast_ref::<rmq_consumer_push::Error>()`). Ask questions
/// with [`is_retryable`](rmq_consumer_base::Error::is_retryable) and
/// [`is_timeout`](rmq_consumer_base::Error::is_timeout) rather than
/// matching variants.
pub type Error = rmq_consumer_base::Error<PushConsumerKind>;

/// `Result` with this crate's [`Error`] as the default error type (what
/// the consumer's own code passes around; its public methods return
/// [`rmq_error::Result`]).
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_name_the_push_consumer() {
        assert_eq!(
            Error::Config("x".into()).to_string(),
            "invalid push consumer configuration: x"
        );
        assert_eq!(
            Error::Shutdown.to_string(),
            "the push consumer is shut down"
        );
        let wrapped = Error::BrokerNotFound {
            broker_name: "b".into(),
        }
        .start_offset(&rmq_protocol::MessageQueue::new("T", "b", 0));
        assert!(wrapped.is_retryable());
    }
}
