//! Name-server header: GET_ROUTEINFO_BY_TOPIC (105).

command_header! {
    /// GET_ROUTEINFO_BY_TOPIC (105) request header (Java
    /// `GetRouteInfoRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct GetRouteInfoRequestHeader {
        /// Topic.
        pub topic: String => "topic",
        /// Name server ≥ 4.9.4: `true` forces standard JSON in the answer.
        pub accept_standard_json_only: Option<bool> => "acceptStandardJsonOnly",
    }
}

impl GetRouteInfoRequestHeader {
    /// The header this client sends: `topic` and
    /// `acceptStandardJsonOnly=true`.
    pub fn new(topic: impl Into<String>) -> Self {
        GetRouteInfoRequestHeader {
            topic: topic.into(),
            accept_standard_json_only: Some(true),
        }
    }
}
