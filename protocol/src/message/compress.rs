//! Body compression (Java `UtilAll.compress` and the `CompressionType` of `MessageSysFlag` bits 8–10): zlib, LZ4 frame and
//! Zstandard, selected by sysFlag bits 8–10.
//!
//! Decompression is always bounded: a body that inflates past the limit is an
//! error, never an unbounded allocation.

use std::io::{self, Read, Write};

use bytes::Bytes;

use super::sys_flag;
use crate::error::{Error, Result};

/// Default cap on a decompressed body: 64 MiB (the broker stores at most 4 MiB
/// per message, so a legitimate body needs a compression ratio of 16 to get
/// near it).
pub const DEFAULT_MAX_BODY_SIZE: usize = 64 * 1024 * 1024;

/// Java's default compression level (`rocketmq.message.compressLevel`).
pub const DEFAULT_COMPRESS_LEVEL: i32 = 5;

/// Java's default body size from which a producer compresses
/// (`compressMsgBodyOverHowmuch`, 4 KiB).
pub const DEFAULT_COMPRESS_OVER: usize = 4096;

/// A body codec, as named by sysFlag bits 8–10 (Java `CompressionType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompressionType {
    /// zlib stream (RFC 1950): type 3, or 0 for 4.x producers.
    Zlib,
    /// LZ4 frame format: type 1.
    Lz4,
    /// Zstandard frame: type 2.
    Zstd,
}

impl CompressionType {
    /// The codec named by `sys_flag`'s bits 8–10 (0 and 3 are zlib). Whether
    /// the body is compressed at all is bit 0, which this does not look at.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidMessage`] for types 4–7, which no broker writes.
    pub fn from_sys_flag(sys_flag: i32) -> Result<Self> {
        match (sys_flag & sys_flag::COMPRESSION_TYPE_MASK) >> 8 {
            0 | 3 => Ok(CompressionType::Zlib),
            1 => Ok(CompressionType::Lz4),
            2 => Ok(CompressionType::Zstd),
            other => Err(Error::InvalidMessage(format!(
                "unknown compression type {other} in sysFlag {sys_flag:#x}; \
                 known types are 0/3 (zlib), 1 (LZ4) and 2 (zstd)"
            ))),
        }
    }

    /// The sysFlag bits a producer sets for a body compressed with this codec:
    /// [`sys_flag::COMPRESSED`] plus the type bits (Java 5.x; zlib gives `0x301`).
    pub const fn sys_flag_bits(self) -> i32 {
        sys_flag::COMPRESSED
            | match self {
                CompressionType::Zlib => sys_flag::COMPRESSION_ZLIB,
                CompressionType::Lz4 => sys_flag::COMPRESSION_LZ4,
                CompressionType::Zstd => sys_flag::COMPRESSION_ZSTD,
            }
    }

    /// The codec's name, for messages.
    pub const fn name(self) -> &'static str {
        match self {
            CompressionType::Zlib => "zlib",
            CompressionType::Lz4 => "LZ4",
            CompressionType::Zstd => "zstd",
        }
    }

    /// Compresses `body`. `level` is 0–9 for zlib, the zstd level for zstd
    /// (Java passes its `compressLevel`, default 5, to both) and ignored for
    /// LZ4 (Java's LZ4 compressor ignores it too).
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] for a zlib level outside 0–9 or if the codec fails.
    pub fn compress(self, body: &[u8], level: i32) -> Result<Bytes> {
        let fail = |e: &dyn std::fmt::Display| {
            Error::Encode(format!("{} compression failed: {e}", self.name()))
        };
        let out = match self {
            CompressionType::Zlib => {
                let level = u32::try_from(level)
                    .ok()
                    .filter(|l| *l <= 9)
                    .ok_or_else(|| {
                        Error::Encode(format!(
                            "zlib compression level {level} is out of range; use 0 to 9"
                        ))
                    })?;
                let mut enc = flate2::write::ZlibEncoder::new(
                    Vec::with_capacity(body.len() / 2 + 16),
                    flate2::Compression::new(level),
                );
                enc.write_all(body).map_err(|e| fail(&e))?;
                enc.finish().map_err(|e| fail(&e))?
            }
            #[cfg(feature = "lz4")]
            CompressionType::Lz4 => {
                let mut enc =
                    lz4_flex::frame::FrameEncoder::new(Vec::with_capacity(body.len() / 2 + 32));
                enc.write_all(body).map_err(|e| fail(&e))?;
                enc.finish().map_err(|e| fail(&e))?
            }
            #[cfg(feature = "zstd")]
            CompressionType::Zstd => zstd::stream::encode_all(body, level).map_err(|e| fail(&e))?,
            #[cfg(not(all(feature = "lz4", feature = "zstd")))]
            _ => return Err(Error::Encode(self.missing_feature())),
        };
        Ok(Bytes::from(out))
    }

    /// Decompresses `body`, failing instead of producing more than `max_len`
    /// bytes.
    ///
    /// # Errors
    ///
    /// [`Error::Decompress`] if the data is empty, corrupt or truncated, or
    /// inflates past `max_len` bytes.
    pub fn decompress(self, body: &[u8], max_len: usize) -> Result<Bytes> {
        if body.is_empty() {
            // Zero frames: LZ4 and zstd readers would return nothing.
            return Err(Error::Decompress {
                codec: self.name(),
                source: io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the compressed body is empty",
                ),
            });
        }
        let hint = body.len().saturating_mul(4).min(max_len);
        match self {
            CompressionType::Zlib => {
                read_bounded(flate2::read::ZlibDecoder::new(body), self, max_len, hint)
            }
            #[cfg(feature = "lz4")]
            CompressionType::Lz4 => read_bounded(
                lz4_flex::frame::FrameDecoder::new(body),
                self,
                max_len,
                hint,
            ),
            #[cfg(feature = "zstd")]
            CompressionType::Zstd => {
                let dec = zstd::stream::read::Decoder::with_buffer(body).map_err(|source| {
                    Error::Decompress {
                        codec: self.name(),
                        source,
                    }
                })?;
                read_bounded(dec, self, max_len, hint)
            }
            #[cfg(not(all(feature = "lz4", feature = "zstd")))]
            _ => Err(Error::Decompress {
                codec: self.name(),
                source: io::Error::new(io::ErrorKind::Unsupported, self.missing_feature()),
            }),
        }
    }

    /// Whether this build can compress and decompress the codec: zlib always,
    /// LZ4 and zstd with the crate features `lz4` and `zstd`.
    pub const fn is_available(self) -> bool {
        match self {
            CompressionType::Zlib => true,
            CompressionType::Lz4 => cfg!(feature = "lz4"),
            CompressionType::Zstd => cfg!(feature = "zstd"),
        }
    }

    /// What to enable for a codec this build lacks.
    #[cfg(not(all(feature = "lz4", feature = "zstd")))]
    fn missing_feature(self) -> String {
        let feature = match self {
            CompressionType::Lz4 => "lz4",
            _ => "zstd",
        };
        format!(
            "{} bodies need the `{feature}` feature of rmq-protocol (the `rmq` crate's \
             `{feature}` feature); this build was made without it",
            self.name()
        )
    }
}

/// Reads `reader` to the end, failing once it yields more than `max_len` bytes.
fn read_bounded<R: Read>(
    reader: R,
    codec: CompressionType,
    max_len: usize,
    hint: usize,
) -> Result<Bytes> {
    let mut out = Vec::with_capacity(hint);
    let limit = u64::try_from(max_len).unwrap_or(u64::MAX).saturating_add(1);
    reader
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|source| Error::Decompress {
            codec: codec.name(),
            source,
        })?;
    if out.len() > max_len {
        return Err(Error::Decompress {
            codec: codec.name(),
            source: io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the body inflates to more than the limit of {max_len} bytes; \
                     raise the decode limit if such bodies are expected"
                ),
            ),
        });
    }
    Ok(Bytes::from(out))
}

/// Compresses a body with zlib at `level` (0–9), as a Java producer does for
/// bodies of at least [`DEFAULT_COMPRESS_OVER`] bytes. Send it with sysFlag
/// `CompressionType::Zlib.sys_flag_bits()` (`0x301`; 4.x brokers accept it too,
/// they only look at bit 0).
///
/// # Errors
///
/// [`Error::Encode`] for a level above 9.
pub fn compress_body(body: &[u8], level: u32) -> Result<Bytes> {
    let level = i32::try_from(level).unwrap_or(i32::MAX);
    CompressionType::Zlib.compress(body, level)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [CompressionType; 3] = [
        CompressionType::Zlib,
        CompressionType::Lz4,
        CompressionType::Zstd,
    ];

    #[test]
    fn from_sys_flag() {
        assert_eq!(
            CompressionType::from_sys_flag(0x1).unwrap(),
            CompressionType::Zlib
        );
        assert_eq!(
            CompressionType::from_sys_flag(0x301).unwrap(),
            CompressionType::Zlib
        );
        assert_eq!(
            CompressionType::from_sys_flag(0x101).unwrap(),
            CompressionType::Lz4
        );
        assert_eq!(
            CompressionType::from_sys_flag(0x201).unwrap(),
            CompressionType::Zstd
        );
        for t in 4..8 {
            assert!(CompressionType::from_sys_flag((t << 8) | 1).is_err());
        }
        for c in ALL {
            assert_eq!(
                CompressionType::from_sys_flag(c.sys_flag_bits()).unwrap(),
                c
            );
        }
        assert_eq!(CompressionType::Zlib.sys_flag_bits(), 0x301);
    }

    #[test]
    fn round_trip_all_codecs() {
        let body: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        for c in ALL {
            let z = c.compress(&body, 5).unwrap();
            assert_eq!(c.decompress(&z, body.len()).unwrap(), body, "{c:?}");
            let empty = c.compress(b"", 5).unwrap();
            assert!(c.decompress(&empty, 0).unwrap().is_empty());
        }
    }

    #[test]
    fn zlib_has_rfc1950_header() {
        let z = compress_body(b"Hello RocketMQ", 5).unwrap();
        assert_eq!(z.first(), Some(&0x78));
        assert!(compress_body(b"x", 10).is_err());
        assert!(CompressionType::Zlib.compress(b"x", -1).is_err());
    }

    #[test]
    fn bomb_is_an_error() {
        let zeros = vec![0u8; 1 << 20];
        for c in ALL {
            let z = c.compress(&zeros, 5).unwrap();
            assert!(z.len() < 64 * 1024);
            assert_eq!(c.decompress(&z, 1 << 20).unwrap().len(), 1 << 20);
            let err = c.decompress(&z, (1 << 20) - 1).unwrap_err();
            assert!(matches!(err, Error::Decompress { .. }), "{c:?}: {err}");
        }
    }

    #[test]
    fn truncated_or_garbage_is_an_error() {
        let body = b"some body some body some body some body".repeat(20);
        for c in ALL {
            let z = c.compress(&body, 5).unwrap();
            // lz4_flex accepts a frame whose 4-byte end mark is cut off (the
            // data is complete then), so cut LZ4 before its end mark.
            let last = if c == CompressionType::Lz4 {
                z.len() - 5
            } else {
                z.len() - 1
            };
            for cut in [0, 1, z.len() / 2, last] {
                let r = c.decompress(&z[..cut], 1 << 20);
                assert!(r.is_err(), "{c:?} cut at {cut} decoded: {r:?}");
            }
            assert!(
                c.decompress(b"\x00garbage, not compressed", 1 << 20)
                    .is_err()
            );
        }
    }
}
