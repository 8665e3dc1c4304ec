//! The differential suite: the same scenarios against the real broker (from
//! `rmq-testkit`: `NAMESRV_ADDR`, or a local one it starts) and against the
//! fake configured like it, comparing what the client sees. Runs on both
//! broker lines in `scripts/test.sh`; the fake imitates the line of the real
//! broker it is compared with (`BrokerFlavor::V4_9` against 4.9.x).

mod locks;
mod membership;
mod namesrv;
mod offsets;
mod orderly;
mod pull;
mod rebalance;
mod retry;
mod send;
mod support;
