//! Message ids (Java `MessageDecoder.createMessageId` and `MessageClientIDSetter`): the offset message id (store host
//! + commit-log offset) and the client-side `UNIQ_KEY`.
//!
//! Nothing here reads a clock: the caller passes the time in.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicI16, Ordering};

use crate::error::{Error, Result};

/// Appends `bytes` to `out` as upper-case hex.
pub(crate) fn push_hex(out: &mut String, bytes: &[u8]) {
    fn digit(n: u8) -> u8 {
        if n < 10 { b'0' + n } else { b'A' + (n - 10) }
    }
    // Digits go to a stack buffer first and into `out` with one copy.
    let mut buf = [0u8; 64];
    for chunk in bytes.chunks(32) {
        for (pair, &b) in buf.chunks_exact_mut(2).zip(chunk) {
            if let [hi, lo] = pair {
                *hi = digit(b >> 4);
                *lo = digit(b & 0x0F);
            }
        }
        // ASCII digits: always UTF-8.
        if let Some(hex) = buf
            .get(..chunk.len() * 2)
            .and_then(|h| std::str::from_utf8(h).ok())
        {
            out.push_str(hex);
        }
    }
}

/// Parses hex (either case) into exactly `N` bytes.
fn parse_hex<const N: usize>(hex: &str) -> Option<[u8; N]> {
    fn value(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let src = hex.as_bytes();
    if src.len() != N.checked_mul(2)? {
        return None;
    }
    let mut out = [0u8; N];
    for (byte, pair) in out.iter_mut().zip(src.chunks_exact(2)) {
        let (hi, lo) = match pair {
            [hi, lo] => (*hi, *lo),
            _ => return None,
        };
        *byte = (value(hi)? << 4) | value(lo)?;
    }
    Some(out)
}

/// The offset message id of a stored message (Java
/// `MessageDecoder.createMessageId`): store host address (4 or 16 bytes) ‖
/// port (i32) ‖ commit-log offset (i64), as upper-case hex — 32 characters
/// for an IPv4 store host, 56 for IPv6.
pub fn offset_msg_id(store_host: SocketAddr, commit_log_offset: i64) -> String {
    // The raw bytes first, then their hex in one pass.
    let mut raw = [0u8; 28];
    let ip_len = match store_host.ip() {
        IpAddr::V4(ip) => copy_into(&mut raw, 0, &ip.octets()),
        IpAddr::V6(ip) => copy_into(&mut raw, 0, &ip.octets()),
    };
    let port_end = copy_into(
        &mut raw,
        ip_len,
        &i32::from(store_host.port()).to_be_bytes(),
    );
    let end = copy_into(&mut raw, port_end, &commit_log_offset.to_be_bytes());
    let mut id = String::with_capacity(end * 2);
    push_hex(&mut id, raw.get(..end).unwrap_or(&raw));
    id
}

/// Copies `src` into `dst` at `at` (as far as it fits); returns where it ends.
fn copy_into(dst: &mut [u8], at: usize, src: &[u8]) -> usize {
    let end = at + src.len();
    if let Some(d) = dst.get_mut(at..end) {
        d.copy_from_slice(src);
    }
    end
}

/// Parses an offset message id (see [`offset_msg_id`]) back into the store
/// host and the commit-log offset. Hex digits may be of either case.
///
/// # Errors
///
/// [`Error::InvalidMessage`] unless `id` is 32 (IPv4) or 56 (IPv6) hex digits
/// with a port in 0–65535. Note that an IPv4 `UNIQ_KEY` also has 32 digits
/// and may parse into a meaningless address.
pub fn parse_offset_msg_id(id: &str) -> Result<(SocketAddr, i64)> {
    let bad = |why: &str| {
        Error::InvalidMessage(format!(
            "{id:?} is not an offset message id: {why}; expected 32 (IPv4) or 56 (IPv6) hex digits"
        ))
    };
    let (ip, tail) = match id.len() {
        32 => {
            let b: [u8; 16] = parse_hex(id).ok_or_else(|| bad("not hex"))?;
            let (ip, tail) = b.split_at(4);
            let ip: [u8; 4] = ip.try_into().map_err(|_| bad("bad address"))?;
            (IpAddr::V4(Ipv4Addr::from(ip)), tail.to_vec())
        }
        56 => {
            let b: [u8; 28] = parse_hex(id).ok_or_else(|| bad("not hex"))?;
            let (ip, tail) = b.split_at(16);
            let ip: [u8; 16] = ip.try_into().map_err(|_| bad("bad address"))?;
            (IpAddr::V6(Ipv6Addr::from(ip)), tail.to_vec())
        }
        n => return Err(bad(&format!("it has {n} characters"))),
    };
    let (port, offset) = tail.split_at(4);
    let port = i32::from_be_bytes(port.try_into().map_err(|_| bad("bad port"))?);
    let port = u16::try_from(port).map_err(|_| bad(&format!("port {port} is out of range")))?;
    let offset = i64::from_be_bytes(offset.try_into().map_err(|_| bad("bad offset"))?);
    Ok((SocketAddr::new(ip, port), offset))
}

/// Generates `UNIQ_KEY` client message ids in Java's shape
/// (`MessageClientIDSetter.createUniqID`): IP (4 or 16 bytes) ‖ pid (i16) ‖ a
/// per-process i32 constant ‖ milliseconds since the start of the current
/// month (i32) ‖ a wrapping i16 counter, as upper-case hex: 32 characters with
/// an IPv4 address, 56 with IPv6.
///
/// Create one per process and share it; [`next`](Self::next) is lock-free.
/// Brokers treat the id as an opaque string, the shape only matters to tools
/// that extract the IP or time from it.
///
/// ```
/// use std::net::{IpAddr, Ipv4Addr};
/// use rmq_protocol::message::UniqIdGenerator;
///
/// let ids = UniqIdGenerator::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 0x1234, 7);
/// assert_eq!(ids.next(1000), "0A000001123400000007000003E80000");
/// assert_eq!(ids.next(1000), "0A000001123400000007000003E80001");
/// ```
#[derive(Debug)]
pub struct UniqIdGenerator {
    /// Hex of IP ‖ pid ‖ seed.
    prefix: String,
    counter: AtomicI16,
}

impl UniqIdGenerator {
    /// A generator for this process: `ip` of this host, `pid` (Java keeps the
    /// low 16 bits of the pid, see [`truncate_pid`](Self::truncate_pid)) and
    /// `seed`, a constant that tells apart generators of one process (Java:
    /// the class loader's hash code; Go: 0). The counter starts at 0.
    pub fn new(ip: IpAddr, pid: u16, seed: i32) -> Self {
        let mut prefix = String::with_capacity(44);
        match ip {
            IpAddr::V4(ip) => push_hex(&mut prefix, &ip.octets()),
            IpAddr::V6(ip) => push_hex(&mut prefix, &ip.octets()),
        }
        push_hex(&mut prefix, &pid.to_be_bytes());
        push_hex(&mut prefix, &seed.to_be_bytes());
        UniqIdGenerator {
            prefix,
            counter: AtomicI16::new(0),
        }
    }

    /// The low 16 bits of a process id, as Java's `(short) UtilAll.getPid()`
    /// keeps them: pass `std::process::id()` through this.
    pub fn truncate_pid(pid: u32) -> u16 {
        let [_, _, hi, lo] = pid.to_be_bytes();
        u16::from_be_bytes([hi, lo])
    }

    /// The next id, for a message created `ms_since_month_start` milliseconds
    /// after the start of the current month (see [`ms_since_month_start`]).
    pub fn next(&self, ms_since_month_start: i32) -> String {
        let count = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut id = String::with_capacity(self.prefix.len() + 12);
        id.push_str(&self.prefix);
        let [a, b, c, d] = ms_since_month_start.to_be_bytes();
        let [e, f] = count.to_be_bytes();
        push_hex(&mut id, &[a, b, c, d, e, f]);
        id
    }

    /// The constant part of every id: hex of IP ‖ pid ‖ seed.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

/// Milliseconds from the start of the month (local time: `utc_offset_secs`
/// east of UTC) to `epoch_ms`, as Java's `createUniqID` computes it:
/// including its wrap into a negative `i32` after about 24.8 days.
pub fn ms_since_month_start(epoch_ms: i64, utc_offset_secs: i32) -> i32 {
    const DAY_MS: i64 = 86_400_000;
    let local = epoch_ms.saturating_add(i64::from(utc_offset_secs).saturating_mul(1000));
    let days = local.div_euclid(DAY_MS);
    let ms_of_day = local.rem_euclid(DAY_MS);
    // Day of the month from days since 1970-01-01 (H. Hinnant's civil_from_days).
    let z = days + 719_468;
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day_of_month = doy - (153 * mp + 2) / 5 + 1;
    let ms = (day_of_month - 1) * DAY_MS + ms_of_day;
    // Java: `(int) (current - startTime)`, a wrapping narrowing.
    let [_, _, _, _, a, b, c, d] = ms.to_be_bytes();
    i32::from_be_bytes([a, b, c, d])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_id_ipv4() {
        let host: SocketAddr = "192.168.0.10:10911".parse().unwrap();
        let id = offset_msg_id(host, 0x1234);
        assert_eq!(id, "C0A8000A00002A9F0000000000001234");
        assert_eq!(parse_offset_msg_id(&id).unwrap(), (host, 0x1234));
        assert_eq!(
            parse_offset_msg_id(&id.to_lowercase()).unwrap(),
            (host, 0x1234)
        );
    }

    #[test]
    fn offset_id_ipv6() {
        let host: SocketAddr = "[fe80::1]:10911".parse().unwrap();
        let id = offset_msg_id(host, -1);
        assert_eq!(id.len(), 56);
        assert_eq!(
            id,
            "FE80000000000000000000000000000100002A9FFFFFFFFFFFFFFFFF"
        );
        assert_eq!(parse_offset_msg_id(&id).unwrap(), (host, -1));
    }

    #[test]
    fn parse_rejects() {
        for id in [
            "",
            "C0A8000A00002A9F000000000000123",
            "C0A8000A00002A9F00000000000012345",
            "G0A8000A00002A9F0000000000001234",
            "C0A8000A00012A9F0000000000001234", // port 0x12A9F
            "C0A8000AFFFFFFFF0000000000001234", // port -1
            "é0A8000A00002A9F000000000000123",
        ] {
            assert!(parse_offset_msg_id(id).is_err(), "{id}");
        }
    }

    #[test]
    fn uniq_id_shape() {
        let g = UniqIdGenerator::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)), 0xABCD, -1);
        assert_eq!(g.prefix(), "7F000001ABCDFFFFFFFF");
        let a = g.next(0x0102_0304);
        assert_eq!(a, "7F000001ABCDFFFFFFFF010203040000");
        assert_eq!(g.next(-1), "7F000001ABCDFFFFFFFFFFFFFFFF0001");
        let v6 = UniqIdGenerator::new("::1".parse().unwrap(), 1, 0);
        assert_eq!(v6.next(0).len(), 56);
    }

    #[test]
    fn uniq_id_counter_wraps() {
        let g = UniqIdGenerator::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0, 0);
        let mut last = String::new();
        for _ in 0..=65_536u32 {
            last = g.next(0);
        }
        // 65 537 ids: counter went 0..=0xFFFF and wrapped to 0.
        assert!(last.ends_with("0000"), "{last}");
        assert_eq!(UniqIdGenerator::truncate_pid(0x0012_3456), 0x3456);
    }

    #[test]
    fn month_start() {
        // 2024-03-01T00:00:00Z = 1709251200000.
        let march1 = 1_709_251_200_000i64;
        assert_eq!(ms_since_month_start(march1, 0), 0);
        assert_eq!(ms_since_month_start(march1 + 1234, 0), 1234);
        // One ms earlier is the end of 29 February (leap year): 29 days - 1 ms,
        // which wraps like Java's int cast.
        let feb_end = 29 * 86_400_000i64 - 1;
        assert_eq!(
            ms_since_month_start(march1 - 1, 0),
            i32::from_be_bytes(feb_end.to_be_bytes()[4..].try_into().unwrap())
        );
        // UTC+8: 2024-03-01T00:00+08:00 is 2024-02-29T16:00Z.
        assert_eq!(ms_since_month_start(march1 - 8 * 3_600_000, 8 * 3600), 0);
        // Epoch and before.
        assert_eq!(ms_since_month_start(0, 0), 0);
        assert_eq!(
            ms_since_month_start(-86_400_000, 0),
            i32::from_be_bytes((30 * 86_400_000i64).to_be_bytes()[4..].try_into().unwrap())
        );
        // Extremes don't panic.
        let _ = ms_since_month_start(i64::MAX, i32::MAX);
        let _ = ms_since_month_start(i64::MIN, i32::MIN);
    }
}
