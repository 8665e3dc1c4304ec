//! HEART_BEAT (34) (Java `ClientManageProcessor.heartBeat`): registers the
//! connection in each consumer group (creating the group and its
//! `%RETRY%<group>` topic) and producer group of the body. When a consumer
//! connection joined a group or its subscribed topics changed, every
//! connection of the group gets NOTIFY_CONSUMER_IDS_CHANGED (not for
//! broadcasting groups).

use std::sync::Arc;

use rmq_protocol::body::{HeartbeatData, MessageModel};
use rmq_protocol::{RemotingCommand, ResponseCode};

use crate::broker::BrokerShared;
use crate::broker::clients::ClientRef;
use crate::broker::topics::retry_topic;
use crate::net::{ConnShared, Incoming, response};

pub(super) fn handle(b: &Arc<BrokerShared>, incoming: &Incoming) -> RemotingCommand {
    let data = match HeartbeatData::decode(&incoming.cmd.body) {
        Ok(d) => d,
        Err(e) => return response(ResponseCode::SYSTEM_ERROR, e.to_string()),
    };
    let client = ClientRef {
        conn: &incoming.conn,
        client_id: &data.client_id,
        language: incoming.cmd.language,
        version: incoming.cmd.version,
    };
    let now = b.now_ms();
    let mut notify: Vec<(String, Vec<Arc<ConnShared>>)> = Vec::new();
    {
        let mut st = b.state();
        for consumer in &data.consumer_data_set {
            let Some(group) = b.group(&mut st, &consumer.group_name) else {
                // Not created and not creatable: silently skipped, as Java does.
                continue;
            };
            b.ensure_topic(
                &mut st,
                &retry_topic(&consumer.group_name),
                group.retry_queue_nums,
            );
            let changed = st.clients.register_consumer(&client, consumer, now);
            if changed
                && group.notify_enable
                && consumer.message_model != MessageModel::Broadcasting
            {
                let conns = st
                    .clients
                    .consumers
                    .get(&consumer.group_name)
                    .map(|g| g.conns())
                    .unwrap_or_default();
                notify.push((consumer.group_name.clone(), conns));
            }
        }
        for producer in &data.producer_data_set {
            st.clients
                .register_producer(&producer.group_name, &client, now);
        }
    }
    for (group, conns) in notify {
        BrokerShared::notify_group(&conns, &group);
    }
    let answer = response(ResponseCode::SUCCESS, None);
    if b.cfg.flavor.is_v5() {
        answer
            .with_ext_field("IS_SUPPORT_HEART_BEAT_V2", "true")
            .with_ext_field("IS_SUB_CHANGE", "true")
    } else {
        answer
    }
}
