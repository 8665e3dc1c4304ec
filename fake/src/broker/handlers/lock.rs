//! LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42) (Java `AdminBrokerProcessor`,
//! `RebalanceLockManager`): orderly consumers' queue locks with leases.

use std::fmt::Write;
use std::sync::Arc;

use rmq_protocol::body::LockBatchRequestBody;
use rmq_protocol::{MessageQueue, RemotingCommand, ResponseCode};

use super::ok;
use crate::broker::BrokerShared;
use crate::net::{Incoming, response};

fn mq_json(out: &mut String, mq: &MessageQueue) {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned());
    let _ = write!(
        out,
        "{{\"brokerName\":{},\"queueId\":{},\"topic\":{}}}",
        q(&mq.broker_name),
        mq.queue_id,
        q(&mq.topic)
    );
}

pub(super) fn lock(b: &Arc<BrokerShared>, incoming: &Incoming) -> RemotingCommand {
    let body = match LockBatchRequestBody::decode(&incoming.cmd.body) {
        Ok(body) => body,
        Err(e) => return response(ResponseCode::SYSTEM_ERROR, e.to_string()),
    };
    let now = b.now_ms();
    let locked = b.state().locks.try_lock_batch(
        &body.consumer_group,
        &body.mq_set,
        &body.client_id,
        now,
        b.lease_ms(),
    );
    let mut json = String::from("{\"lockOKMQSet\":[");
    for (i, mq) in locked.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        mq_json(&mut json, mq);
    }
    json.push_str("]}");
    response(ResponseCode::SUCCESS, None).with_body(json.into_bytes())
}

pub(super) fn unlock(b: &Arc<BrokerShared>, incoming: &Incoming) -> RemotingCommand {
    let body = match LockBatchRequestBody::decode(&incoming.cmd.body) {
        Ok(body) => body,
        Err(e) => return response(ResponseCode::SYSTEM_ERROR, e.to_string()),
    };
    b.state()
        .locks
        .unlock_batch(&body.consumer_group, &body.mq_set, &body.client_id);
    ok()
}
