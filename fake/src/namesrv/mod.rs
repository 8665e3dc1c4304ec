//! The fake name server (Java `RouteInfoManager`, `DefaultRequestProcessor`,
//! `ClientRequestProcessor`): routes of the topics the fake brokers
//! registered, and cluster info.
//!
//! The fake brokers register in-process, synchronously: a topic a broker
//! creates is routable when the creating call returns, a killed broker
//! disappears from every route at once (as when the real name server sees
//! the broker's connection close).
//!
//! | code | answer |
//! |---|---|
//! | GET_ROUTEINFO_BY_TOPIC (105) | `TopicRouteData`, standard JSON when `acceptStandardJsonOnly` or `version` ≥ 401; TOPIC_NOT_EXIST (17) without route |
//! | GET_BROKER_CLUSTER_INFO (106) | `ClusterInfo` (fastjson's non-standard keys) |
//! | GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206) | `TopicList` |
//! | anything else | REQUEST_CODE_NOT_SUPPORTED (3) |

mod json;
mod routes;
mod service;

pub(crate) use routes::{FAQ, NameServer};
pub(crate) use service::{NameServerService, not_supported};
