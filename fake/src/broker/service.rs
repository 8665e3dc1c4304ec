//! The broker's [`net::Service`]: requests go to the handlers, a closed
//! connection leaves its groups and held pulls.

use std::sync::Arc;

use rmq_protocol::body::MessageModel;

use super::handlers;
use super::state::BrokerShared;
use crate::net::{self, ConnShared};

/// The broker's [`net::Service`].
#[derive(Debug)]
pub(crate) struct BrokerService(pub(crate) Arc<BrokerShared>);

impl net::Service for BrokerService {
    fn handle(&self, incoming: net::Incoming) -> Option<net::Handled> {
        handlers::dispatch(&self.0, incoming)
    }

    fn connection_closed(&self, conn: &Arc<ConnShared>) {
        let changed = {
            let mut st = self.0.state();
            st.holds.remove_conn(conn.id);
            st.clients.connection_closed(conn.id)
        };
        for (group, model, remaining) in changed {
            if model != MessageModel::Broadcasting {
                BrokerShared::notify_group(&remaining, &group);
            }
        }
    }
}
