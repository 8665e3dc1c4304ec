//! [`HeartbeatGate`]: a heartbeat before the first call to each broker.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rmq_client_core::ClientInstance;

/// Makes sure a heartbeat naming this client's groups reached a broker
/// before the first call to it: 5.x brokers refuse offset updates of a
/// group they have not seen, and the instance's own early heartbeat after a
/// route change runs in the background (it may lose the race).
#[derive(Debug, Default)]
pub struct HeartbeatGate {
    seen: Mutex<HashSet<String>>,
}

impl HeartbeatGate {
    /// Sends a heartbeat now (to every known broker) if `addr` has not had
    /// one through this gate yet.
    pub async fn ensure(&self, instance: &ClientInstance, addr: &str) {
        if self.lock().contains(addr) {
            return;
        }
        instance.send_heartbeat_now().await;
        let mut seen = self.lock();
        seen.insert(addr.to_owned());
        seen.extend(instance.broker_addrs().into_iter().map(|(_, _, a)| a));
    }

    fn lock(&self) -> MutexGuard<'_, HashSet<String>> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
