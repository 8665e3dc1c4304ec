//! What follows a failed listener call over gRPC: the message hidden for a
//! while (`ChangeInvisibleDuration`) or moved to the DLQ
//! (`ForwardMessageToDeadLetterQueue`), each tried until it works (the
//! engine's [`hide`] and [`forward_to_dlq`]); acks go to the
//! [`Acker`](rmq_consumer_base::engine::grpc::Acker).

use rmq_consumer_base::engine::grpc::{Named, forward_to_dlq, hide};
use rmq_grpc::Receipt;
use rmq_protocol::MessageExt;

use super::policy::Failed;
use super::queue::QueueState;
use super::state::GrpcInner;

/// Settles a message its listener call failed: hidden for a while, or to
/// the DLQ ([`Failed::RetryAfter`] is the FIFO service's own). Leaves the
/// queue's count either way.
pub(super) async fn failed(
    inner: &GrpcInner,
    queue: &QueueState,
    msg: &MessageExt,
    receipt: &Receipt,
    what: Failed,
) {
    let named = Named {
        topic: &queue.mq.topic,
        message_id: &msg.msg_id,
        receipt_handle: &receipt.receipt_handle,
    };
    let (session, group, stop) = (&inner.session, inner.group(), &inner.abort);
    let attempt = receipt.delivery_attempt;
    match what {
        Failed::Hide(delay) | Failed::RetryAfter(delay) => {
            let ok = hide(session, group, &named, attempt, delay, stop).await;
            queue.metrics.sent_back(ok, false);
        }
        Failed::Dlq => {
            let max = inner.proxy_settings().backoff.max_attempts();
            let ok = forward_to_dlq(session, group, &named, attempt, max, stop).await;
            queue.metrics.sent_back(ok, true);
        }
    }
    queue.release(1, msg.body.len());
}
