//! Version-1 message ids, as the official 5.x gRPC clients make them (Java
//! `MessageIdCodec` of rocketmq-client-java): `01` ‖ MAC address (6 bytes)
//! ‖ the low 2 bytes of the pid ‖ seconds since 2021-01-01T00:00:00Z (low 4
//! bytes) ‖ a per-process sequence (4 bytes, wrapping), upper-case hex: 34
//! characters. The proxy stores the id as the message's `UNIQ_KEY`.
//!
//! Nothing here reads a clock: the caller passes the time in.

use std::sync::atomic::{AtomicU32, Ordering};

use super::id::push_hex;

/// The version prefix of a version-1 id (Java `MESSAGE_ID_VERSION_V1`).
pub const MESSAGE_ID_V1_PREFIX: &str = "01";
/// The length of a version-1 id (Java `MESSAGE_ID_LENGTH_FOR_V1_OR_LATER`).
pub const MESSAGE_ID_V1_LEN: usize = 34;
/// 2021-01-01T00:00:00Z in ms since the Unix epoch: the epoch of the
/// seconds in a version-1 id.
pub const MESSAGE_ID_V1_EPOCH_MS: i64 = 1_609_459_200_000;

/// Generates version-1 message ids (see the module docs). Create one per
/// process and share it; [`next`](Self::next) is lock-free.
///
/// ```
/// use rmq_protocol::message::{MessageIdV1Generator, is_message_id_v1};
///
/// let ids = MessageIdV1Generator::new([0x02, 0x42, 0xAC, 0x11, 0x00, 0x02], 4242);
/// let id = ids.next(1_609_459_200_000 + 65_000);
/// assert_eq!(id, "010242AC11000210920000004100000000");
/// assert!(is_message_id_v1(&id));
/// assert!(ids.next(1_609_459_200_000 + 65_000).ends_with('1'));
/// ```
#[derive(Debug)]
pub struct MessageIdV1Generator {
    /// `01`, MAC and pid, in hex.
    prefix: String,
    sequence: AtomicU32,
}

impl MessageIdV1Generator {
    /// A generator for the host with hardware address `mac` and the
    /// process `pid` (its low 2 bytes go into the id).
    pub fn new(mac: [u8; 6], pid: u32) -> Self {
        let mut prefix = String::with_capacity(MESSAGE_ID_V1_LEN);
        prefix.push_str(MESSAGE_ID_V1_PREFIX);
        let [_, _, p1, p2] = pid.to_be_bytes();
        let [m1, m2, m3, m4, m5, m6] = mac;
        let fixed = [m1, m2, m3, m4, m5, m6, p1, p2];
        push_hex(&mut prefix, &fixed);
        MessageIdV1Generator {
            prefix,
            sequence: AtomicU32::new(0),
        }
    }

    /// The next id, made at `now_ms` (ms since the Unix epoch).
    pub fn next(&self, now_ms: i64) -> String {
        let seconds = now_ms
            .saturating_sub(MESSAGE_ID_V1_EPOCH_MS)
            .div_euclid(1000);
        let [.., s1, s2, s3, s4] = seconds.to_be_bytes();
        let [q1, q2, q3, q4] = self.sequence.fetch_add(1, Ordering::Relaxed).to_be_bytes();
        let mut id = String::with_capacity(MESSAGE_ID_V1_LEN);
        id.push_str(&self.prefix);
        push_hex(&mut id, &[s1, s2, s3, s4, q1, q2, q3, q4]);
        id
    }
}

/// Whether `id` has the shape of a version-1 id: 34 hex digits starting
/// with `01` (Java `MessageIdCodec.decode` reads any 34-character id as
/// version + rest).
pub fn is_message_id_v1(id: &str) -> bool {
    id.len() == MESSAGE_ID_V1_LEN
        && id.starts_with(MESSAGE_ID_V1_PREFIX)
        && id.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_java() {
        // Java MessageIdCodec with MAC 00:16:3E:01:02:03, pid 0x0001ABCD, 3 s after the epoch,
        // sequence 0 then 1: "01" + "00163E010203" + "ABCD" + "00000003" + "00000000".
        let g = MessageIdV1Generator::new([0x00, 0x16, 0x3E, 0x01, 0x02, 0x03], 0x0001_ABCD);
        let t = MESSAGE_ID_V1_EPOCH_MS + 3_999;
        assert_eq!(g.next(t), "0100163E010203ABCD0000000300000000");
        assert_eq!(g.next(t), "0100163E010203ABCD0000000300000001");
        // Seconds keep their low 4 bytes; a time before the epoch counts back.
        let far = MESSAGE_ID_V1_EPOCH_MS + (1_i64 << 32) * 1000 + 5_000;
        assert!(g.next(far).ends_with("0000000500000002"));
        assert!(g.next(MESSAGE_ID_V1_EPOCH_MS - 1_000).contains("FFFFFFFF"));
    }

    #[test]
    fn shape() {
        let g = MessageIdV1Generator::new([1, 2, 3, 4, 5, 6], 7);
        let id = g.next(1_700_000_000_000);
        assert_eq!(id.len(), MESSAGE_ID_V1_LEN);
        assert!(is_message_id_v1(&id), "{id}");
        assert!(!is_message_id_v1("7F0000010001000000000000000A0000"));
        assert!(!is_message_id_v1(&format!("02{}", &id[2..])));
        assert!(!is_message_id_v1(&format!("{}G", &id[..33])));
    }
}
