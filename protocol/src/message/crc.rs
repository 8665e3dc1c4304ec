//! Body CRC (Java `UtilAll.crc32` of the body, stored in `BODYCRC`).

/// The BODYCRC of a stored body: CRC-32 (IEEE, Java `java.util.zip.CRC32`) of
/// the body *as stored* (after compression), masked with `0x7FFFFFFF` (Java
/// `UtilAll.crc32`).
pub fn body_crc(stored_body: &[u8]) -> i32 {
    let masked = crc32fast::hash(stored_body) & 0x7FFF_FFFF;
    i32::try_from(masked).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_example() {
        assert_eq!(body_crc(b"Hello RocketMQ"), 1_774_740_973);
    }

    #[test]
    fn masked_non_negative() {
        // CRC32("123456789") = 0xCBF43926, masked to 0x4BF43926.
        assert_eq!(body_crc(b"123456789"), 0x4BF4_3926);
        assert_eq!(body_crc(b""), 0);
    }
}
