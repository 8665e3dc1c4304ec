//! `UNIQ_KEY` message ids in the Java client's shape (Java
//! `MessageClientIDSetter.createUniqID`), from one generator per process as in Java
//! (`MessageClientIDSetter` is static).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::OnceLock;

use rmq_client_core::now_ms;
use rmq_protocol::message::{UniqIdGenerator, ms_since_month_start};

static GENERATOR: OnceLock<UniqIdGenerator> = OnceLock::new();

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
}
