//! [`offset_store_for`]: the offset store a consumer of a given message model
//! uses.

use std::path::Path;
use std::sync::Arc;

use rmq_client_core::ClientInstance;
use rmq_protocol::body::MessageModel;

use crate::error::Result;
use crate::local::LocalFileOffsetStore;
use crate::remote::RemoteBrokerOffsetStore;
use crate::store::OffsetStore;

/// The offset store a consumer of `group` uses for `model` (Java
/// `DefaultMQPushConsumerImpl.start` / `DefaultLitePullConsumerImpl.start`):
///
/// * [`MessageModel::Clustering`]: a [`RemoteBrokerOffsetStore`] on
///   `instance`.
/// * [`MessageModel::Broadcasting`]: a [`LocalFileOffsetStore`] for the
///   instance's client id, under `root` when given, else under the default
///   root (see [`LocalFileOffsetStore::new`]).
///
/// Nothing is read yet: call [`load`](OffsetStore::load) next.
///
/// # Errors
///
/// Broadcasting only: the errors of [`LocalFileOffsetStore::with_root`] and
/// [`LocalFileOffsetStore::new`] (an invalid client id or group, no default
/// root directory).
pub fn offset_store_for(
    model: MessageModel,
    instance: &ClientInstance,
    group: &str,
    root: Option<&Path>,
) -> Result<Arc<dyn OffsetStore>> {
    Ok(match model {
        MessageModel::Clustering => Arc::new(RemoteBrokerOffsetStore::new(instance.clone(), group)),
        MessageModel::Broadcasting => {
            let client_id = instance.client_id().to_owned();
            Arc::new(match root {
                Some(root) => LocalFileOffsetStore::with_root(root, client_id, group)?,
                None => LocalFileOffsetStore::new(client_id, group)?,
            })
        }
    })
}
