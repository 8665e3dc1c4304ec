//! JSON bodies: route data, heartbeat data, consumer lists, lock sets and
//! the broker's non-standard JSON.
//!
//! (Stub: being filled in.)
