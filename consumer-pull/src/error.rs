//! The pull consumers' error type: the consumers' shared [`Error`] of the
//! pull consumer kind.

/// The pull consumer kind of [`rmq_consumer_base::Error`]; never
/// constructed.
#[derive(Debug)]
pub enum PullConsumerKind {}

impl rmq_consumer_base::Kind for PullConsumerKind {
    const NAME: &'static str = "pull consumer";
}

/// Errors of [`PullConsumer`](crate::PullConsumer) and
/// [`LitePullConsumer`](crate::LitePullConsumer) (the variants are
/// [`rmq_consumer_base::Error`]'s): what the public methods'
/// [`rmq_error::Error`] wraps
/// (`e.downcast_ref::<rmq_consumer_pull::Error>()`). Ask questions with the predicates
/// ([`is_retryable`](rmq_consumer_base::Error::is_retryable),
/// [`is_timeout`](rmq_consumer_base::Error::is_timeout),
/// [`is_shutdown`](rmq_consumer_base::Error::is_shutdown),
/// [`queue`](rmq_consumer_base::Error::queue)) rather than matching
/// variants.
pub type Error = rmq_consumer_base::Error<PullConsumerKind>;

/// `Result` with this crate's [`Error`] as the default error type (what
/// the consumers' own code passes around; their public methods return
/// [`rmq_error::Result`]).
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Runs the body of a public method, whose errors are this crate's, and
/// returns them as [`rmq_error::Error`]: `?` in the body converts into
/// this crate's [`Error`] first, so the unified error always wraps one.
pub(crate) async fn unify<T>(body: impl Future<Output = Result<T>>) -> rmq_error::Result<T> {
    body.await.map_err(Into::into)
}

/// [`unify`] for a method that does not wait.
pub(crate) fn unify_now<T>(body: impl FnOnce() -> Result<T>) -> rmq_error::Result<T> {
    body().map_err(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_name_the_pull_consumer() {
        assert_eq!(
            Error::Config("x".into()).to_string(),
            "invalid pull consumer configuration: x"
        );
        assert_eq!(
            Error::Shutdown.to_string(),
            "the pull consumer is shut down"
        );
        assert!(Error::Shutdown.is_shutdown());
    }
}
