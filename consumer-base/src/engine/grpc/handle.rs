//! [`Handle`]: what names a received message in the calls that settle it
//! (ack, invisible-time change, DLQ).

/// A received message as the proxy knows it.
pub trait Handle {
    /// The topic it was received from.
    fn topic(&self) -> &str;
    /// Its message id.
    fn message_id(&self) -> &str;
    /// Its current receipt handle.
    fn receipt_handle(&self) -> &str;
}

impl<T: Handle + ?Sized> Handle for &T {
    fn topic(&self) -> &str {
        (**self).topic()
    }

    fn message_id(&self) -> &str {
        (**self).message_id()
    }

    fn receipt_handle(&self) -> &str {
        (**self).receipt_handle()
    }
}

/// A [`Handle`] of borrowed names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Named<'a> {
    /// The topic.
    pub topic: &'a str,
    /// The message id.
    pub message_id: &'a str,
    /// The receipt handle.
    pub receipt_handle: &'a str,
}

impl<'a> Named<'a> {
    /// The names of `h`.
    pub fn of(h: &'a (impl Handle + ?Sized)) -> Self {
        Named {
            topic: h.topic(),
            message_id: h.message_id(),
            receipt_handle: h.receipt_handle(),
        }
    }
}

impl Handle for Named<'_> {
    fn topic(&self) -> &str {
        self.topic
    }

    fn message_id(&self) -> &str {
        self.message_id
    }

    fn receipt_handle(&self) -> &str {
        self.receipt_handle
    }
}
