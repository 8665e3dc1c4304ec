//! [`ClientConfigSource`]: where a producer or consumer builder gets its
//! [`ClientConfig`], and [`client_setters!`](crate::client_setters), the
//! two builder setters that fill it.

use crate::config::ClientConfig;
use crate::error::Result;

/// What a builder was told about its client configuration: a whole
/// [`ClientConfig`] (`client_config`), or only the name servers for the
/// default one (`namesrv_addr`), or nothing (the defaults, name servers from
/// `NAMESRV_ADDR`).
#[derive(Debug, Clone, Default)]
pub struct ClientConfigSource {
    config: Option<ClientConfig>,
    namesrv_addrs: Option<String>,
}

impl ClientConfigSource {
    /// Uses `config` (it overrides the name servers).
    pub fn set_config(&mut self, config: ClientConfig) {
        self.config = Some(config);
    }

    /// Uses the default config with these name servers (`;`-separated).
    pub fn set_namesrv_addr(&mut self, addrs: String) {
        self.namesrv_addrs = Some(addrs);
    }

    /// Whether name servers were given with `namesrv_addr(s)` (a builder
    /// whose other transport, the 5.x proxy, takes none checks this).
    pub fn namesrv_addr_given(&self) -> bool {
        self.namesrv_addrs.is_some()
    }

    /// The config given, else a default one with the name servers given,
    /// else the defaults ([`ClientConfig::from_parts`]).
    ///
    /// # Errors
    ///
    /// [`Error::Config`](crate::Error::Config) when the built config is
    /// invalid.
    pub fn resolve(self) -> Result<ClientConfig> {
        ClientConfig::from_parts(self.config, self.namesrv_addrs)
    }
}

/// Adds the `client_config` and `namesrv_addr` setters to a builder whose
/// field `$field` is a [`ClientConfigSource`], so every producer and
/// consumer builder documents them once, the same way.
///
/// ```
/// # use rmq_client_core::ClientConfigSource;
/// #[derive(Default)]
/// pub struct MyBuilder {
///     client: ClientConfigSource,
/// }
/// rmq_client_core::client_setters!(MyBuilder, client);
///
/// let b = MyBuilder::default().namesrv_addr("127.0.0.1:9876");
/// let config = b.client.resolve().unwrap();
/// assert_eq!(config.namesrv_addrs(), ["127.0.0.1:9876"]);
/// ```
#[macro_export]
macro_rules! client_setters {
    ($builder:ty, $($field:ident).+) => {
        impl $builder {
            /// The client configuration (name servers, instance name, client
            /// IP, timeouts, persist interval...). Default:
            /// `ClientConfig::builder().build()`, i.e. the name servers of
            /// `NAMESRV_ADDR`. Overrides [`namesrv_addr`](Self::namesrv_addr).
            ///
            /// An instance name left at `DEFAULT` becomes `<pid>#<nanos>` at
            /// start for producers and clustering consumers (Java
            /// `changeInstanceNameToPID`), so two of them in one process get
            /// distinct client ids.
            pub fn client_config(mut self, config: $crate::ClientConfig) -> Self {
                self.$($field).+.set_config(config);
                self
            }

            /// Name-server addresses, `;`-separated (Java `namesrvAddr`),
            /// for the default client configuration. Default: `NAMESRV_ADDR`.
            pub fn namesrv_addr(mut self, addrs: impl Into<String>) -> Self {
                self.$($field).+.set_namesrv_addr(addrs.into());
                self
            }

            /// Name-server addresses as a list (`["10.0.0.1:9876",
            /// "10.0.0.2:9876"]`), for the default client configuration;
            /// the same as [`namesrv_addr`](Self::namesrv_addr) with the
            /// addresses joined by `;`. Default: `NAMESRV_ADDR`.
            pub fn namesrv_addrs<I, S>(self, addrs: I) -> Self
            where
                I: IntoIterator<Item = S>,
                S: Into<String>,
            {
                let joined: Vec<String> = addrs.into_iter().map(Into::into).collect();
                self.namesrv_addr(joined.join(";"))
            }
        }
    };
}
