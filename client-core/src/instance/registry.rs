//! The process-wide registry: client id → running instance, and the user
//! count that decides when an instance stops.
//!
//! The registry's lock guards the user counts too, so a `get_or_start`
//! racing the last `release` either joins the instance before it starts
//! closing or starts a new one: never one that is shutting down.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError, Weak};

use super::{ClientInstance, Inner};
use crate::config::ClientConfig;
use crate::error::Result;

static REGISTRY: LazyLock<Mutex<HashMap<String, Weak<Inner>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn registry() -> MutexGuard<'static, HashMap<String, Weak<Inner>>> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// See [`ClientInstance::get_or_start`]: the running instance of
/// `config`'s client id, else the one `start` makes of `config` (called
/// under the registry's lock).
pub(super) fn get_or_start(
    config: ClientConfig,
    start: impl FnOnce(ClientConfig) -> Result<ClientInstance>,
) -> Result<ClientInstance> {
    let client_id = config.client_id();
    let mut map = registry();
    if let Some(inner) = map.get(&client_id).and_then(Weak::upgrade) {
        if !inner.is_closing() {
            inner.users.fetch_add(1, Ordering::AcqRel);
            return Ok(ClientInstance { inner });
        }
    }
    let instance = start(config)?;
    map.insert(client_id, Arc::downgrade(&instance.inner));
    Ok(instance)
}

/// Drops one user; returns `true` when that was the last one (the instance
/// is then marked closing and removed from the registry, and the caller
/// must shut it down).
pub(super) fn release(instance: &ClientInstance) -> bool {
    let mut map = registry();
    let inner = &instance.inner;
    let users = inner.users.load(Ordering::Acquire);
    if users == 0 || inner.is_closing() {
        return false;
    }
    inner.users.store(users - 1, Ordering::Release);
    if users > 1 {
        return false;
    }
    inner.closing.store(true, Ordering::Release);
    remove_locked(&mut map, inner);
    true
}

/// Removes the instance from the registry if the entry is still this one.
pub(super) fn remove(instance: &ClientInstance) {
    let mut map = registry();
    remove_locked(&mut map, &instance.inner);
}

fn remove_locked(map: &mut HashMap<String, Weak<Inner>>, inner: &Arc<Inner>) {
    let ours = map
        .get(&inner.client_id)
        .is_some_and(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(inner)));
    if ours {
        map.remove(&inner.client_id);
    }
    // Entries whose instance is gone are cleaned up as we pass by.
    map.retain(|_, w| w.strong_count() > 0);
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn config(instance: &str) -> ClientConfig {
        ClientConfig::builder()
            .namesrv_addr("127.0.0.1:1")
            .client_ip("127.0.0.1")
            .instance_name(instance)
            .build()
            .unwrap()
    }

    #[test]
    fn outside_a_runtime_is_an_error() {
        let err = ClientInstance::get_or_start(config("no-runtime")).unwrap_err();
        assert!(matches!(err, crate::Error::Config(_)), "{err}");
    }

    #[tokio::test]
    async fn shared_per_client_id_and_stopped_by_the_last_user() {
        let a = ClientInstance::get_or_start(config("reg-1")).unwrap();
        let b = ClientInstance::get_or_start(config("reg-1")).unwrap();
        let other = ClientInstance::get_or_start(config("reg-2")).unwrap();
        assert!(Arc::ptr_eq(&a.inner, &b.inner));
        assert!(!Arc::ptr_eq(&a.inner, &other.inner));
        assert_eq!(a.users(), 2);

        a.release().await;
        assert!(!b.is_shutdown());
        assert_eq!(b.users(), 1);
        b.release().await;
        assert!(b.is_shutdown());
        assert!(b.inner.remoting.is_shutdown());
        assert!(b.inner.tasks.is_empty());
        // Extra releases are ignored.
        b.release().await;

        let c = ClientInstance::get_or_start(config("reg-1")).unwrap();
        assert!(!Arc::ptr_eq(&a.inner, &c.inner));
        assert!(!c.is_shutdown());
        c.shutdown().await;
        c.shutdown().await;
        other.shutdown().await;
        assert!(other.route("T").await.is_err());
    }

    #[tokio::test]
    async fn duplicate_groups_are_rejected() {
        let i = ClientInstance::get_or_start(config("reg-dup")).unwrap();
        i.register_producer("P").await.unwrap();
        let err = i.register_producer("P").await.unwrap_err();
        assert!(
            matches!(
                err,
                crate::Error::DuplicateGroup {
                    kind: "producer",
                    ..
                }
            ),
            "{err}"
        );
        i.unregister_producer("P").await;
        i.register_producer("P").await.unwrap();
        i.shutdown().await;
        assert!(matches!(
            i.register_producer("Q").await,
            Err(crate::Error::Shutdown)
        ));
    }

    #[tokio::test]
    async fn dropped_handles_stop_the_tasks() {
        let i = ClientInstance::get_or_start(config("reg-drop")).unwrap();
        let token = i.inner.cancel.clone();
        let weak = i.downgrade();
        drop(i);
        assert!(weak.upgrade().is_none());
        assert!(token.is_cancelled());
        // A new instance replaces the dead entry.
        let j = ClientInstance::get_or_start(config("reg-drop")).unwrap();
        assert_eq!(j.users(), 1);
        tokio::time::timeout(Duration::from_secs(10), j.release())
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn unreachable_name_server_is_reported() {
        let i = ClientInstance::get_or_start(config("reg-ns")).unwrap();
        let err = i.route("T").await.unwrap_err();
        assert!(
            matches!(err, crate::Error::NameServerUnavailable { .. }),
            "{err}"
        );
        assert!(err.is_retryable());
        i.shutdown().await;
    }
}
