//! The admin side of the commands: one client instance, and the brokers to
//! ask (the masters of the cluster, or of a topic's route).

use std::sync::Arc;

use rmq::client_core::{ClientInstance, TopicRouteInfo};
use rmq::protocol::body::BrokerData;

use crate::error::{CliError, Result};
use crate::settings::ConnectArgs;

/// A master broker.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Master {
    pub(crate) cluster: String,
    pub(crate) name: String,
    pub(crate) addr: String,
}

impl Master {
    /// The master of a broker entry, if it has one.
    fn of(b: &BrokerData) -> Option<Master> {
        b.master_addr().map(|addr| Master {
            cluster: b.cluster.clone(),
            name: b.broker_name.clone(),
            addr: addr.to_owned(),
        })
    }
}

/// A client instance for admin calls; [`release`](Admin::release) it.
#[derive(Debug)]
pub(crate) struct Admin {
    instance: ClientInstance,
}

impl Admin {
    /// Starts a client instance for the connection settings.
    pub(crate) fn connect(args: &ConnectArgs) -> Result<Admin> {
        let config = args.client_config("rmq-cli-admin")?;
        let instance = ClientInstance::get_or_start(config)?;
        Ok(Admin { instance })
    }

    pub(crate) fn instance(&self) -> &ClientInstance {
        &self.instance
    }

    /// Every master broker the name servers know, sorted; only those of
    /// `cluster` when given.
    ///
    /// # Errors
    ///
    /// The name-server call failing; [`CliError::Usage`] when `cluster` is
    /// unknown or no master is registered.
    pub(crate) async fn masters(&self, cluster: Option<&str>) -> Result<Vec<Master>> {
        let info = self.instance.get_broker_cluster_info().await?;
        if let Some(c) = cluster {
            if !info.cluster_addr_table.contains_key(c) {
                return Err(CliError::Usage(format!(
                    "no cluster {c:?} (known: {})",
                    info.cluster_addr_table
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        let mut masters: Vec<Master> = info
            .broker_addr_table
            .values()
            .filter(|b| cluster.is_none_or(|c| b.cluster == c))
            .filter_map(Master::of)
            .collect();
        masters.sort();
        if masters.is_empty() {
            return Err(CliError::Usage(
                "the name servers know no master broker".to_owned(),
            ));
        }
        Ok(masters)
    }

    /// The topic's current route and the masters of its brokers.
    ///
    /// # Errors
    ///
    /// The route query failing (no such topic: `RouteNotFound`).
    pub(crate) async fn topic(&self, topic: &str) -> Result<(Arc<TopicRouteInfo>, Vec<Master>)> {
        let route = self.instance.refresh_route(topic).await?;
        let mut masters: Vec<Master> = route
            .route_data()
            .broker_datas
            .iter()
            .filter_map(Master::of)
            .collect();
        masters.sort();
        Ok((route, masters))
    }

    /// Stops the instance.
    pub(crate) async fn release(self) {
        self.instance.release().await;
    }
}
