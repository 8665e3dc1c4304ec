//! A bounds-checked big-endian cursor over one record of a `Bytes` buffer.

use bytes::Bytes;

use crate::error::{Error, Result};

/// Reads the fields of one record, `buf[pos..end]`, never past `end`.
pub(super) struct Reader<'a> {
    buf: &'a Bytes,
    pos: usize,
    end: usize,
    /// Start of the record in `buf`, for error messages.
    start: usize,
    /// What the record is ("stored message", "batch record"), for error messages.
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// A reader of `buf[start..end]` positioned at `pos`; `end` must be ≤ `buf.len()`.
    pub(super) fn new(
        buf: &'a Bytes,
        start: usize,
        pos: usize,
        end: usize,
        what: &'static str,
    ) -> Self {
        Reader {
            buf,
            pos,
            end: end.min(buf.len()),
            start,
            what,
        }
    }

    /// An error about this record.
    pub(super) fn error(&self, msg: impl std::fmt::Display) -> Error {
        Error::InvalidMessage(format!("{} at byte {}: {msg}", self.what, self.start))
    }

    #[cold]
    #[inline(never)]
    fn short(&self, field: &str, n: usize) -> Error {
        let left = self.end.saturating_sub(self.pos);
        self.error(format_args!(
            "{field} needs {n} bytes but only {left} remain in the record \
             (its TOTALSIZE is too small or the data is truncated)"
        ))
    }

    /// The next `n` bytes as a slice.
    #[inline]
    pub(super) fn take(&mut self, n: usize, field: &str) -> Result<&'a [u8]> {
        let buf: &'a Bytes = self.buf;
        // `end <= buf.len()`, so one check against `end` covers both.
        match buf.get(self.pos..self.end).and_then(|rest| rest.get(..n)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(self.short(field, n)),
        }
    }

    /// The next `n` bytes as a zero-copy `Bytes` slice of the buffer.
    #[inline]
    pub(super) fn bytes(&mut self, n: usize, field: &str) -> Result<Bytes> {
        let from = self.pos;
        self.take(n, field)?;
        if n == 0 {
            return Ok(Bytes::new());
        }
        Ok(self.buf.slice(from..self.pos))
    }

    #[inline(always)]
    fn array<const N: usize>(&mut self, field: &str) -> Result<[u8; N]> {
        match self
            .buf
            .get(self.pos..self.end)
            .and_then(|rest| rest.first_chunk::<N>())
        {
            Some(a) => {
                self.pos += N;
                Ok(*a)
            }
            None => Err(self.short(field, N)),
        }
    }

    #[inline(always)]
    pub(super) fn u8(&mut self, field: &str) -> Result<u8> {
        Ok(u8::from_be_bytes(self.array(field)?))
    }

    #[inline(always)]
    pub(super) fn i16(&mut self, field: &str) -> Result<i16> {
        Ok(i16::from_be_bytes(self.array(field)?))
    }

    #[inline(always)]
    pub(super) fn i32(&mut self, field: &str) -> Result<i32> {
        Ok(i32::from_be_bytes(self.array(field)?))
    }

    #[inline(always)]
    pub(super) fn i64(&mut self, field: &str) -> Result<i64> {
        Ok(i64::from_be_bytes(self.array(field)?))
    }

    /// A 4- or 16-byte address followed by an i32 port.
    pub(super) fn host(&mut self, v6: bool, field: &str) -> Result<std::net::SocketAddr> {
        use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
        let ip = if v6 {
            IpAddr::V6(Ipv6Addr::from(self.array::<16>(field)?))
        } else {
            IpAddr::V4(Ipv4Addr::from(self.array::<4>(field)?))
        };
        let port = self.i32(field)?;
        let port = u16::try_from(port)
            .map_err(|_| self.error(format_args!("{field} port {port} is out of range")))?;
        Ok(std::net::SocketAddr::new(ip, port))
    }

    /// A length field that must not be negative.
    #[inline]
    pub(super) fn len_i32(&mut self, field: &str) -> Result<usize> {
        let n = self.i32(field)?;
        usize::try_from(n).map_err(|_| self.error(format_args!("{field} {n} is negative")))
    }

    /// A 16-bit length field that must not be negative.
    #[inline]
    pub(super) fn len_i16(&mut self, field: &str) -> Result<usize> {
        let n = self.i16(field)?;
        usize::try_from(n).map_err(|_| self.error(format_args!("{field} {n} is negative")))
    }
}

/// Reads the TOTALSIZE at `buf[start..]` and checks it against the bytes left:
/// returns the record's end. `min` is the smallest plausible record.
pub(super) fn record_end(
    buf: &Bytes,
    start: usize,
    min: usize,
    what: &'static str,
) -> Result<usize> {
    let left = buf.len().saturating_sub(start);
    let head = buf
        .get(start..)
        .and_then(|b| b.get(..4))
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .ok_or_else(|| {
            Error::InvalidMessage(format!(
                "{what} at byte {start}: only {left} bytes left, not enough for its TOTALSIZE \
                 (the body is truncated)"
            ))
        })?;
    let total = i32::from_be_bytes(head);
    let size = usize::try_from(total)
        .ok()
        .filter(|t| *t >= min)
        .ok_or_else(|| {
            Error::InvalidMessage(format!(
                "{what} at byte {start}: TOTALSIZE {total} is smaller than the smallest possible \
             record ({min} bytes)"
            ))
        })?;
    if size > left {
        return Err(Error::InvalidMessage(format!(
            "{what} at byte {start}: TOTALSIZE {total} exceeds the {left} bytes left \
             (the body is truncated)"
        )));
    }
    start.checked_add(size).ok_or_else(|| {
        Error::InvalidMessage(format!(
            "{what} at byte {start}: TOTALSIZE {total} overflows"
        ))
    })
}
