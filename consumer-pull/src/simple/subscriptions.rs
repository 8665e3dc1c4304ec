//! [`Subscriptions`]: a simple consumer's subscriptions, changed while it
//! runs.

use std::sync::{Mutex, MutexGuard, PoisonError};

use rmq_consumer_base::Subscription;

use crate::error::{Error, Result};

/// The subscriptions, one per topic.
pub(crate) struct Subscriptions(Mutex<Vec<Subscription>>);

impl Subscriptions {
    pub(crate) fn new(list: Vec<Subscription>) -> Self {
        Subscriptions(Mutex::new(list))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Vec<Subscription>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Checks `sub` and adds it, or replaces the topic's; answers the
    /// topic.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a bad topic or expression.
    pub(crate) fn add(&self, sub: Subscription) -> Result<String> {
        sub.check().map_err(Error::InvalidArgument)?;
        let topic = sub.topic.clone();
        Subscription::upsert(&mut self.lock(), sub);
        Ok(topic)
    }
}
