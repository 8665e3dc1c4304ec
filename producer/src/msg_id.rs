//! `UNIQ_KEY` message ids in the Java client's shape (Java
//! `MessageClientIDSetter.createUniqID`), from one generator per process as in Java
//! (`MessageClientIDSetter` is static); and the version-1 ids of the Java gRPC
//! client (`MessageIdCodec`) for messages sent through the proxy.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::OnceLock;

use rmq_client_core::now_ms;
use rmq_protocol::message::{MessageIdV1Generator, UniqIdGenerator, ms_since_month_start};

static GENERATOR: OnceLock<UniqIdGenerator> = OnceLock::new();
static GENERATOR_V1: OnceLock<MessageIdV1Generator> = OnceLock::new();

/// This host's address as Java's `UtilAll.getIP()` would pick it (the first
/// non-loopback address), falling back to 127.0.0.1.
pub(crate) fn host_ip() -> IpAddr {
    #[cfg(feature = "local-ip")]
    let ip = local_ip_address::local_ip().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    // Built without the `local-ip` feature: the interfaces are not looked up.
    #[cfg(not(feature = "local-ip"))]
    let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
    ip
}

/// A random per-process constant (Java: the class loader's hash code).
fn process_seed() -> i32 {
    let mut h = RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    let [a, b, c, d, ..] = h.finish().to_be_bytes();
    i32::from_be_bytes([a, b, c, d])
}

fn generator() -> &'static UniqIdGenerator {
    GENERATOR.get_or_init(|| {
        UniqIdGenerator::new(
            host_ip(),
            UniqIdGenerator::truncate_pid(std::process::id()),
            process_seed(),
        )
    })
}

/// A fresh `UNIQ_KEY`: IP ‖ pid ‖ seed ‖ ms since the start of the month ‖
/// counter, upper-case hex.
///
/// The month is taken in UTC (Java uses the JVM's time zone); brokers treat
/// the id as opaque, only tools that decode the time from it would see the
/// difference.
pub(crate) fn next_uniq_id() -> String {
    generator().next(ms_since_month_start(now_ms(), 0))
}

/// This host's hardware address as Java's `Utilities.macAddress()` picks
/// it: the first network interface (by index) with a non-zero MAC address;
/// random bytes when there is none (Java too).
fn mac_address() -> [u8; 6] {
    let mut found: Vec<(u32, [u8; 6])> = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/sys/class/net") {
        for entry in dir.flatten() {
            let path = entry.path();
            let index = std::fs::read_to_string(path.join("ifindex"))
                .ok()
                .and_then(|i| i.trim().parse().ok())
                .unwrap_or(u32::MAX);
            let mac = std::fs::read_to_string(path.join("address"))
                .ok()
                .and_then(|a| parse_mac(a.trim()));
            if let Some(mac) = mac.filter(|m| m.iter().any(|b| *b != 0)) {
                found.push((index, mac));
            }
        }
    }
    found.sort_unstable();
    found.first().map_or_else(
        || {
            let [a, b, c, d, e, f, ..] = RandomState::new()
                .hash_one(std::process::id())
                .to_be_bytes();
            [a, b, c, d, e, f]
        },
        |(_, mac)| *mac,
    )
}

/// `aa:bb:cc:dd:ee:ff` as bytes.
fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = text.split(':');
    for b in &mut out {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// A fresh version-1 message id (Java gRPC `MessageIdCodec.nextMessageId`):
/// `01` ‖ MAC ‖ pid ‖ seconds since 2021 ‖ sequence, 34 upper-case hex
/// digits. Messages sent through the proxy get these, as the Java gRPC
/// client's do.
pub(crate) fn next_message_id_v1() -> String {
    GENERATOR_V1
        .get_or_init(|| MessageIdV1Generator::new(mac_address(), std::process::id()))
        .next(now_ms())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_java_shaped() {
        let a = next_uniq_id();
        let b = next_uniq_id();
        assert_ne!(a, b);
        assert!(a.len() == 32 || a.len() == 56, "{a}");
        assert!(
            a.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase())
        );
        // Same prefix (ip, pid, seed) for the whole process.
        assert_eq!(a[..a.len() - 12], b[..b.len() - 12]);
    }

    #[test]
    fn v1_ids_are_java_grpc_shaped() {
        let a = next_message_id_v1();
        let b = next_message_id_v1();
        assert_ne!(a, b);
        assert!(rmq_protocol::message::is_message_id_v1(&a), "{a}");
        // Same MAC and pid for the whole process.
        assert_eq!(a[..18], b[..18]);
        let pid = std::process::id().to_be_bytes();
        assert_eq!(&a[14..18], format!("{:02X}{:02X}", pid[2], pid[3]));
        assert_eq!(
            parse_mac("02:42:ac:11:00:02"),
            Some([2, 0x42, 0xac, 0x11, 0, 2])
        );
        assert_eq!(parse_mac("02:42"), None);
        assert_eq!(parse_mac("02:42:ac:11:00:02:03"), None);
        assert!(mac_address().iter().any(|b| *b != 0));
    }
}
