//! [`Scope`]: what a broker call is about, for naming its refusal.

/// The topic and group a broker call is about: they name a refusal.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub(crate) topic: Option<&'a str>,
    pub(crate) group: Option<&'a str>,
}

impl<'a> Scope<'a> {
    /// About no topic and no group (heartbeats, unregistration).
    pub(crate) const NONE: Scope<'static> = Scope {
        topic: None,
        group: None,
    };

    pub(crate) fn of(topic: &'a str, group: &'a str) -> Self {
        Scope {
            topic: Some(topic),
            group: Some(group),
        }
    }

    pub(crate) fn topic(topic: &'a str) -> Self {
        Scope {
            topic: Some(topic),
            group: None,
        }
    }

    pub(crate) fn group(group: &'a str) -> Self {
        Scope {
            topic: None,
            group: Some(group),
        }
    }
}
