//! Rewriting the broker addresses of a GET_ROUTEINFO_BY_TOPIC body.
//!
//! The body is parsed with the protocol crate's lenient reader into a generic
//! JSON tree, the `brokerDatas[*].brokerAddrs` values are replaced, and the
//! tree is written back as standard JSON. Working on the tree rather than on
//! [`TopicRouteData`] keeps every field, including those the typed body does
//! not model (e.g. 5.x `topicQueueMappingByBroker`); the typed body is used to
//! list the addresses and to check the result.

use std::collections::HashMap;

use rmq_protocol::body::{TopicRouteData, lenient_json};
use serde_json::Value;

/// Why a route body could not be rewritten. The proxy then closes the
/// client's connection instead of answering: a route that names a real broker
/// would let the client bypass the proxy and its faults.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RewriteError {
    /// The body is not a route (even with the lenient reader).
    #[error("the route body does not decode: {0}")]
    Decode(#[from] rmq_protocol::Error),
    /// Writing the tree back failed.
    #[error("cannot write the rewritten route body: {0}")]
    Encode(#[from] serde_json::Error),
    /// A broker of the route has no proxy listener (the proxy is shutting
    /// down, or binding one failed).
    #[error("no proxy listener for the broker at {upstream}: {reason}")]
    NoListener {
        /// The real broker address.
        upstream: String,
        /// Why the listener is missing.
        reason: String,
    },
    /// The rewritten body does not decode to the expected route.
    #[error("the rewritten route body does not match the original route with new addresses")]
    Mismatch,
}

/// Every broker address in `route`, without duplicates, in order of appearance.
pub(crate) fn broker_addrs(route: &TopicRouteData) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for addr in route
        .broker_datas
        .iter()
        .flat_map(|bd| bd.broker_addrs.values())
    {
        if !out.contains(addr) {
            out.push(addr.clone());
        }
    }
    out
}

/// Rewrites `body` (a GET_ROUTEINFO_BY_TOPIC body, standard or fastjson JSON)
/// so that each broker address found in `map` becomes its mapped value.
/// Addresses not in `map` stay. The result is standard JSON.
///
/// # Errors
///
/// [`RewriteError`] when the body is not a route or the result does not
/// decode to the original route with the new addresses.
pub(crate) fn rewrite_route(
    body: &[u8],
    map: &HashMap<String, String>,
) -> Result<Vec<u8>, RewriteError> {
    let original = TopicRouteData::decode(body)?;
    let mut tree = lenient_json::parse(body)?;
    if let Some(datas) = tree.get_mut("brokerDatas").and_then(Value::as_array_mut) {
        for data in datas {
            let Some(addrs) = data.get_mut("brokerAddrs").and_then(Value::as_object_mut) else {
                continue;
            };
            for addr in addrs.values_mut() {
                if let Some(new) = addr.as_str().and_then(|a| map.get(a)) {
                    *addr = Value::String(new.clone());
                }
            }
        }
    }
    let out = serde_json::to_vec(&tree)?;

    let mut expected = original;
    for bd in &mut expected.broker_datas {
        for addr in bd.broker_addrs.values_mut() {
            if let Some(new) = map.get(addr.as_str()) {
                addr.clone_from(new);
            }
        }
    }
    if TopicRouteData::decode(&out)? != expected {
        return Err(RewriteError::Mismatch);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // fastjson-style: unquoted integer map keys, an unknown 5.x field.
    const FASTJSON: &[u8] = br#"{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"C","enableActingMaster":false},{"brokerAddrs":{0:"10.0.0.3:10911"},"brokerName":"broker-b","cluster":"C"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}],"topicQueueMappingByBroker":{"broker-a":{"bname":"broker-a","epoch":7}}}"#;

    fn map() -> HashMap<String, String> {
        [
            ("10.0.0.1:10911", "127.0.0.1:4001"),
            ("10.0.0.3:10911", "127.0.0.1:4003"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect()
    }

    #[test]
    fn rewrites_addresses_and_keeps_other_fields() {
        let out = rewrite_route(FASTJSON, &map()).unwrap();
        let route = TopicRouteData::decode(&out).unwrap();
        assert_eq!(
            route.broker("broker-a").unwrap().master_addr(),
            Some("127.0.0.1:4001")
        );
        assert_eq!(
            route
                .broker("broker-a")
                .unwrap()
                .broker_addrs
                .get(&1)
                .map(String::as_str),
            Some("10.0.0.2:10911")
        );
        assert_eq!(
            route.broker("broker-b").unwrap().master_addr(),
            Some("127.0.0.1:4003")
        );
        assert_eq!(route.queue_datas.len(), 1);

        // Standard JSON, with the field the typed body does not model.
        let tree: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(tree["topicQueueMappingByBroker"]["broker-a"]["epoch"], 7);
        assert_eq!(tree["brokerDatas"][0]["brokerAddrs"]["0"], "127.0.0.1:4001");
    }

    #[test]
    fn lists_addresses_once() {
        let route = TopicRouteData::decode(FASTJSON).unwrap();
        assert_eq!(
            broker_addrs(&route),
            ["10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911"]
        );
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(rewrite_route(b"not json", &map()).is_err());
        assert!(rewrite_route(br#"{"brokerDatas":7}"#, &map()).is_err());
    }
}
