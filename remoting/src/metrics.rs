//! Connection metrics, through the `metrics` facade (no-ops until the
//! application installs a recorder). Names and labels: the table in
//! `METRICS.md` at the repository root.

use rmq_protocol::RequestCode;

/// Gauge: connections open now (every client of the process).
pub const CONNECTIONS: &str = "messaging.rocketmq.client.connections";
/// Counter: connections opened again to an address that had one before.
pub const RECONNECTS: &str = "messaging.rocketmq.client.reconnects";
/// Counter: requests without an answer within their timeout, by request
/// code (label [`REQUEST_CODE`]).
pub const REQUEST_TIMEOUTS: &str = "messaging.rocketmq.client.request.timeouts";
/// Label: the request code's name (Java `RequestCode`), or its number.
pub const REQUEST_CODE: &str = "messaging.rocketmq.request.code";

/// A connection's driver started.
pub(crate) fn connection_opened() {
    metrics::gauge!(CONNECTIONS).increment(1.0);
}

/// A connection's driver ended.
pub(crate) fn connection_closed() {
    metrics::gauge!(CONNECTIONS).decrement(1.0);
}

/// A connection to an address that was connected before.
pub(crate) fn reconnected() {
    metrics::counter!(RECONNECTS).increment(1);
}

/// A request with `code` timed out (rare: the label is built here).
pub(crate) fn request_timed_out(code: RequestCode) {
    let label = match code.name() {
        Some(name) => std::borrow::Cow::Borrowed(name),
        None => std::borrow::Cow::Owned(i32::from(code).to_string()),
    };
    metrics::counter!(REQUEST_TIMEOUTS, REQUEST_CODE => label).increment(1);
}
