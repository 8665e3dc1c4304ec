//! The consume start time a listener call stamps on the messages it gets,
//! whichever engine fetched them.

use rmq_client_core::now_ms;
use rmq_protocol::MessageExt;
use rmq_protocol::message::{Properties, SharedValue, property};

/// Stamps `CONSUME_START_TIME` (now, ms since the epoch) on messages a
/// listener is about to get (Java `ConsumeMessageConcurrentlyService`); one
/// value shared by the batch, and by every batch of the same millisecond
/// on this thread; the messages of one pull response keep sharing one list
/// of their added pairs.
pub fn mark_consume_start(msgs: &mut [MessageExt]) {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(i64, SharedValue)>> =
            const { std::cell::RefCell::new(None) };
    }
    let now = now_ms();
    let start = LAST.with_borrow_mut(|last| match last {
        Some((ms, value)) if *ms == now => value.clone(),
        _ => {
            let value = SharedValue::from(now.to_string());
            *last = Some((now, value.clone()));
            value
        }
    });
    Properties::insert_shared_in(
        msgs.iter_mut().map(|m| &mut m.message.properties),
        &[(property::CONSUME_START_TIME, &start)],
    );
}
