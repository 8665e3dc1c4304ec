//! Consumer offset stores for rmq.
#![warn(missing_docs)]
