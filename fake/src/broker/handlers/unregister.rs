//! UNREGISTER_CLIENT (35) (Java `ClientManageProcessor`): removes this
//! connection from the named producer and consumer groups; the consumers
//! left in the group are told (NOTIFY_CONSUMER_IDS_CHANGED).

use std::sync::Arc;

use rmq_protocol::RemotingCommand;
use rmq_protocol::body::MessageModel;
use rmq_protocol::header::UnregisterClientRequestHeader;

use super::{header, ok};
use crate::broker::BrokerShared;
use crate::net::Incoming;

pub(super) fn handle(b: &Arc<BrokerShared>, incoming: &Incoming) -> RemotingCommand {
    let h: UnregisterClientRequestHeader = match header(&incoming.cmd) {
        Ok(h) => h,
        Err(answer) => return answer,
    };
    let conn = incoming.conn.id;
    let mut notify = None;
    {
        let mut st = b.state();
        if let Some(group) = &h.producer_group {
            st.clients.unregister_producer(group, conn);
        }
        if let Some(group) = &h.consumer_group {
            let enabled = st.groups.get(group).is_none_or(|g| g.notify_enable);
            if let Some((model, remaining)) = st.clients.unregister_consumer(group, conn) {
                if enabled && model != MessageModel::Broadcasting {
                    notify = Some((group.clone(), remaining));
                }
            }
        }
    }
    if let Some((group, conns)) = notify {
        BrokerShared::notify_group(&conns, &group);
    }
    ok()
}
