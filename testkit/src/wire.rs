//! A minimal, blocking, std-only remoting request used to find brokers behind a name server.
//!
//! Independent of `rmq-protocol` on purpose: the testkit must be able to describe the test broker
//! even while the crates under test are broken.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde_json::{Value, json};

/// `GET_BROKER_CLUSTER_INFO`, sent to a name server.
const GET_BROKER_CLUSTER_INFO: i32 = 106;
/// `GET_BROKER_RUNTIME_INFO`, sent to a broker.
const GET_BROKER_RUNTIME_INFO: i32 = 28;
/// `CONTROLLER_GET_SYNC_STATE_DATA`, sent to a 5.x controller (body: a JSON list of broker names).
const CONTROLLER_GET_SYNC_STATE_DATA: i32 = 1006;
/// Responses above this are not what we asked for.
const MAX_FRAME: usize = 16 * 1024 * 1024;

/// One broker address registered with a name server (`GET_BROKER_CLUSTER_INFO`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegisteredBroker {
    /// Cluster name.
    pub cluster: String,
    /// Broker name (`broker-a`).
    pub name: String,
    /// Broker id: 0 is the master.
    pub id: i64,
    /// Address, `host:port`.
    pub addr: String,
}

/// Brokers registered with the name server at `namesrv` (blocking, 5 s timeouts), sorted by name
/// then id. Errors describe what failed (connect, response code, body).
pub fn registered_brokers(namesrv: &str) -> Result<Vec<RegisteredBroker>, String> {
    let body = request(namesrv, GET_BROKER_CLUSTER_INFO)?;
    let info = parse_java_json(&body)?;
    let mut out = Vec::new();
    if let Some(table) = info.get("brokerAddrTable").and_then(Value::as_object) {
        for (name, data) in table {
            let cluster = data
                .get("cluster")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if let Some(addrs) = data.get("brokerAddrs").and_then(Value::as_object) {
                for (id, addr) in addrs {
                    out.push(RegisteredBroker {
                        cluster: cluster.clone(),
                        name: name.clone(),
                        id: id.parse().unwrap_or(-1),
                        addr: addr.as_str().unwrap_or_default().to_owned(),
                    });
                }
            }
        }
    }
    out.sort_by(|a, b| (&a.name, a.id).cmp(&(&b.name, b.id)));
    Ok(out)
}

/// The addresses of `broker_name`'s replicas in the sync state set of the 5.x controller at
/// `controller` (blocking, 5 s timeouts): the replicas the controller may elect master, the master
/// included. Errors describe what failed.
pub fn in_sync_replicas(controller: &str, broker_name: &str) -> Result<Vec<String>, String> {
    let names = json!([broker_name]).to_string();
    let body = request_with_body(controller, CONTROLLER_GET_SYNC_STATE_DATA, names.as_bytes())?;
    let info = parse_java_json(&body)?;
    let replicas = info
        .get("replicasInfoTable")
        .and_then(|t| t.get(broker_name))
        .and_then(|r| r.get("inSyncReplicas"))
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{controller}: no sync state data of {broker_name}"))?;
    Ok(replicas
        .iter()
        .filter_map(|r| r.get("brokerAddress").and_then(Value::as_str))
        .map(str::to_owned)
        .collect())
}

/// The broker's version as `5.5.0` (from `brokerVersionDesc`, e.g. `V5_5_0`).
pub(crate) fn broker_version(broker: &str) -> Result<String, String> {
    let body = request(broker, GET_BROKER_RUNTIME_INFO)?;
    let kv = parse_java_json(&body)?;
    let desc = kv
        .get("table")
        .and_then(|t| t.get("brokerVersionDesc"))
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{broker}: runtime info has no brokerVersionDesc"))?;
    Ok(version_from_desc(desc))
}

/// `V5_5_0` → `5.5.0`, `V4_9_7` → `4.9.7`; anything else unchanged.
pub(crate) fn version_from_desc(desc: &str) -> String {
    desc.strip_prefix('V')
        .map(|v| v.replace('_', "."))
        .unwrap_or_else(|| desc.to_owned())
}

/// Sends one JSON-header request without body and returns the response body (code must be 0).
fn request(addr: &str, code: i32) -> Result<Vec<u8>, String> {
    request_with_body(addr, code, &[])
}

/// As [`request`], with a body.
fn request_with_body(addr: &str, code: i32, body: &[u8]) -> Result<Vec<u8>, String> {
    let timeout = Duration::from_secs(5);
    let sock = addr
        .to_socket_addrs()
        .map_err(|e| format!("{addr}: bad address: {e}"))?
        .next()
        .ok_or_else(|| format!("{addr}: address resolves to nothing"))?;
    let mut stream = TcpStream::connect_timeout(&sock, timeout)
        .map_err(|e| format!("{addr}: cannot connect: {e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| format!("{addr}: {e}"))?;

    let header = json!({
        "code": code, "language": "OTHER", "version": 0, "opaque": 1, "flag": 0, "extFields": {}
    })
    .to_string();
    let header_len = u32::try_from(header.len()).map_err(|_| "header too long".to_owned())?;
    let body_len = u32::try_from(body.len()).map_err(|_| "body too long".to_owned())?;
    let mut frame = Vec::with_capacity(header.len() + body.len() + 8);
    frame.extend_from_slice(&(header_len + body_len + 4).to_be_bytes());
    frame.extend_from_slice(&header_len.to_be_bytes());
    frame.extend_from_slice(header.as_bytes());
    frame.extend_from_slice(body);
    stream
        .write_all(&frame)
        .map_err(|e| format!("{addr}: write failed: {e}"))?;

    let mut len = [0u8; 4];
    stream
        .read_exact(&mut len)
        .map_err(|e| format!("{addr}: no response: {e}"))?;
    let total = usize::try_from(u32::from_be_bytes(len)).unwrap_or(usize::MAX);
    if !(4..=MAX_FRAME).contains(&total) {
        return Err(format!("{addr}: bad frame length {total}"));
    }
    let mut data = vec![0u8; total];
    stream
        .read_exact(&mut data)
        .map_err(|e| format!("{addr}: truncated response: {e}"))?;
    let (head, rest) = data.split_at(4);
    let raw = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    if raw >> 24 != 0 {
        return Err(format!(
            "{addr}: response header is not JSON (serialize type {})",
            raw >> 24
        ));
    }
    let header_len = usize::try_from(raw & 0x00FF_FFFF).unwrap_or(usize::MAX);
    if header_len > rest.len() {
        return Err(format!(
            "{addr}: header length {header_len} exceeds the frame"
        ));
    }
    let (header, body) = rest.split_at(header_len);
    let header: Value = serde_json::from_slice(header)
        .map_err(|e| format!("{addr}: response header is not JSON: {e}"))?;
    let resp_code = header.get("code").and_then(Value::as_i64).unwrap_or(-1);
    if resp_code != 0 {
        let remark = header.get("remark").and_then(Value::as_str).unwrap_or("");
        return Err(format!(
            "{addr}: request {code} answered code {resp_code}: {remark}"
        ));
    }
    Ok(body.to_vec())
}

/// Parses fastjson output, which writes integer map keys unquoted (`{0:"127.0.0.1:10911"}`).
pub(crate) fn parse_java_json(body: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(body).map_err(|e| format!("body is not UTF-8: {e}"))?;
    serde_json::from_str(&quote_integer_keys(text))
        .map_err(|e| format!("body is not JSON: {e}: {text}"))
}

fn quote_integer_keys(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_string = false;
    let mut escaped = false;
    let mut after_open = false; // last significant char outside strings was '{' or ','
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        if after_open && (c == '-' || c.is_ascii_digit()) {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                if d.is_ascii_digit() {
                    end = j + 1;
                    chars.next();
                } else {
                    break;
                }
            }
            let number = text.get(i..end).unwrap_or_default();
            let rest = text.get(end..).unwrap_or_default();
            if rest.trim_start().starts_with(':') {
                out.push('"');
                out.push_str(number);
                out.push('"');
            } else {
                out.push_str(number);
            }
            after_open = false;
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                after_open = false;
            }
            '{' | ',' => after_open = true,
            c if c.is_whitespace() => {}
            _ => after_open = false,
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_bare_integer_keys_only() {
        let raw = r#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911", 1 :"x,2:y"},"n":[1,2]}},"v":-3}"#;
        let fixed = quote_integer_keys(raw);
        let v: Value = serde_json::from_str(&fixed).expect("valid JSON");
        let addrs = &v["brokerAddrTable"]["broker-a"]["brokerAddrs"];
        assert_eq!(addrs["0"], "127.0.0.1:10911");
        assert_eq!(addrs["1"], "x,2:y");
        assert_eq!(v["brokerAddrTable"]["broker-a"]["n"], json!([1, 2]));
        assert_eq!(v["v"], -3);
    }

    #[test]
    fn version_desc() {
        assert_eq!(version_from_desc("V5_5_0"), "5.5.0");
        assert_eq!(version_from_desc("V4_9_7"), "4.9.7");
        assert_eq!(version_from_desc("weird"), "weird");
    }
}
