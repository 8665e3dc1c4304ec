//! Message system-flag bits (Java `MessageSysFlag`).
//!
//! The same bit field is used in stored messages (SYSFLAG), in
//! [`MessageExt::sys_flag`](super::MessageExt::sys_flag) and in the send
//! header's `sysFlag`.

/// Bit 0: the body is compressed (the codec is in [`COMPRESSION_TYPE_MASK`]).
pub const COMPRESSED: i32 = 0x1;
/// Bit 1: unused by clients (`MULTI_TAGS_FLAG`).
pub const MULTI_TAGS: i32 = 0x2;
/// Bits 2–3 = 0: not a transactional message (`TRANSACTION_NOT_TYPE`).
pub const TRANSACTION_NOT_TYPE: i32 = 0;
/// Bits 2–3 = 1: transactional half message (`TRANSACTION_PREPARED_TYPE`).
pub const TRANSACTION_PREPARED_TYPE: i32 = 0x1 << 2;
/// Bits 2–3 = 2: committed transaction (`TRANSACTION_COMMIT_TYPE`).
pub const TRANSACTION_COMMIT_TYPE: i32 = 0x2 << 2;
/// Bits 2–3 = 3: rolled-back transaction (`TRANSACTION_ROLLBACK_TYPE`).
pub const TRANSACTION_ROLLBACK_TYPE: i32 = 0x3 << 2;
/// Mask of the transaction type bits 2–3.
pub const TRANSACTION_TYPE_MASK: i32 = TRANSACTION_ROLLBACK_TYPE;
/// Bit 4: the born host is IPv6 (`BORNHOST_V6_FLAG`).
pub const BORNHOST_V6: i32 = 0x1 << 4;
/// Bit 5: the store host is IPv6 (`STOREHOSTADDRESS_V6_FLAG`).
pub const STOREHOST_V6: i32 = 0x1 << 5;
/// Bit 6: a 5.x inner-batch container whose body must be unwrapped
/// (`NEED_UNWRAP_FLAG`), together with [`INNER_BATCH`].
pub const NEED_UNWRAP: i32 = 0x1 << 6;
/// Bit 7: a 5.x inner-batch container (`INNER_BATCH_FLAG`).
pub const INNER_BATCH: i32 = 0x1 << 7;
/// Compression type 1 (LZ4 frame) in bits 8–10 (`COMPRESSION_LZ4_TYPE`).
pub const COMPRESSION_LZ4: i32 = 0x1 << 8;
/// Compression type 2 (Zstandard) in bits 8–10 (`COMPRESSION_ZSTD_TYPE`).
pub const COMPRESSION_ZSTD: i32 = 0x2 << 8;
/// Compression type 3 (zlib) in bits 8–10 (`COMPRESSION_ZLIB_TYPE`). Type 0
/// (4.x producers set only [`COMPRESSED`]) also means zlib.
pub const COMPRESSION_ZLIB: i32 = 0x3 << 8;
/// Mask of the compression type bits 8–10 (`COMPRESSION_TYPE_COMPARATOR`).
pub const COMPRESSION_TYPE_MASK: i32 = 0x7 << 8;

/// Whether any of `bits` is set in `flag` (Java `MessageSysFlag.check`).
pub const fn check(flag: i32, bits: i32) -> bool {
    flag & bits != 0
}

/// The transaction type bits of `flag` (one of the `TRANSACTION_*_TYPE` values).
pub const fn transaction_type(flag: i32) -> i32 {
    flag & TRANSACTION_TYPE_MASK
}

/// `flag` with its transaction type replaced by `ty` (a `TRANSACTION_*_TYPE` value).
pub const fn reset_transaction_type(flag: i32, ty: i32) -> i32 {
    (flag & !TRANSACTION_TYPE_MASK) | (ty & TRANSACTION_TYPE_MASK)
}

/// Whether `flag` marks a 5.x inner-batch container to unwrap (both
/// [`INNER_BATCH`] and [`NEED_UNWRAP`] set; Java `MessageSysFlag.INNER_BATCH_FLAG`, `NEED_UNWRAP_FLAG`).
pub const fn is_inner_batch(flag: i32) -> bool {
    flag & (INNER_BATCH | NEED_UNWRAP) == INNER_BATCH | NEED_UNWRAP
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_match_java() {
        assert_eq!(COMPRESSED | COMPRESSION_ZLIB, 0x301);
        assert_eq!(TRANSACTION_PREPARED_TYPE, 0x4);
        assert_eq!(TRANSACTION_COMMIT_TYPE, 0x8);
        assert_eq!(TRANSACTION_ROLLBACK_TYPE, 0xC);
        assert_eq!(BORNHOST_V6, 0x10);
        assert_eq!(STOREHOST_V6, 0x20);
        assert_eq!(NEED_UNWRAP, 0x40);
        assert_eq!(INNER_BATCH, 0x80);
        assert_eq!(COMPRESSION_TYPE_MASK, 0x700);
    }

    #[test]
    fn helpers() {
        assert!(check(0x31, STOREHOST_V6));
        assert!(!check(0x31, BORNHOST_V6 << 8));
        assert_eq!(transaction_type(0x30D), TRANSACTION_ROLLBACK_TYPE);
        assert_eq!(
            reset_transaction_type(0x30D, TRANSACTION_COMMIT_TYPE),
            0x309
        );
        assert!(is_inner_batch(0xC0));
        assert!(!is_inner_batch(0x80));
        assert!(!is_inner_batch(0x40));
    }
}
