//! The frame layout, [`RemotingCodec`], decoding frames and the header
//! dispatch between the JSON and ROCKETMQ encodings. Encoding is in
//! `encode.rs`.

use std::collections::HashMap;

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::Decoder;

use crate::code::{LanguageCode, SerializeType};
use crate::command::RemotingCommand;
use crate::error::Error;

use super::{binary, json};

/// The default maximum frame length: 16 MiB, the broker's `frameMaxLength`.
///
/// Like the broker, the limit counts the whole frame: the 4-byte length
/// prefix plus everything after it.
pub const DEFAULT_MAX_FRAME_LEN: usize = 16 * 1024 * 1024;

/// Length prefix plus header word.
pub(super) const PREFIX_LEN: usize = 8;

/// The header fields common to both serializations, before the body is attached.
#[derive(Debug)]
pub(super) struct HeaderFields {
    pub(super) code: i32,
    pub(super) language: LanguageCode,
    pub(super) version: i32,
    pub(super) opaque: i32,
    pub(super) flag: i32,
    pub(super) remark: Option<String>,
    pub(super) ext_fields: HashMap<String, String>,
}

impl HeaderFields {
    /// A JSON header's fields before its members are read: `code` is
    /// required, the rest default to 0, `OTHER`, none.
    pub(super) fn json_defaults() -> Self {
        HeaderFields {
            code: 0,
            language: LanguageCode::Other,
            version: 0,
            opaque: 0,
            flag: 0,
            remark: None,
            ext_fields: HashMap::new(),
        }
    }
}

/// Where the decoder is within the current frame.
#[derive(Debug, Clone, Copy)]
enum DecodeState {
    /// Waiting for the 8-byte prefix (length and header word).
    Head,
    /// The 4-byte length has been consumed; waiting for `len` bytes (header
    /// word, header, body).
    Data {
        len: usize,
        header_len: usize,
        serialize_type: SerializeType,
    },
}

/// Frame codec for [`RemotingCommand`]s.
///
/// Decoding reads both header serializations on every frame (the type byte
/// of each frame says which); encoding writes the header in the command's
/// [`RemotingCommand::serialize_type`]. A decoded command's `body` is a
/// zero-copy slice of the received frame.
///
/// After the decoder returns an error the stream is out of sync and the
/// connection must be closed.
///
/// ```
/// use bytes::BytesMut;
/// use rmq_protocol::{RemotingCodec, RemotingCommand, RequestCode};
/// use tokio_util::codec::{Decoder, Encoder};
///
/// let mut codec = RemotingCodec::new();
/// let mut buf = BytesMut::new();
/// let cmd = RemotingCommand::new_request(RequestCode::HEART_BEAT).with_body(&b"{}"[..]);
/// codec.encode(cmd.clone(), &mut buf)?;
/// assert_eq!(codec.decode(&mut buf)?, Some(cmd));
/// assert!(buf.is_empty());
/// # Ok::<(), rmq_protocol::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct RemotingCodec {
    max_frame_len: usize,
    state: DecodeState,
}

impl Default for RemotingCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl RemotingCodec {
    /// A codec with the default maximum frame length ([`DEFAULT_MAX_FRAME_LEN`]).
    pub fn new() -> Self {
        RemotingCodec {
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            state: DecodeState::Head,
        }
    }

    /// Sets the maximum frame length, counting the 4-byte length prefix, for
    /// both decoding and encoding. Defaults to [`DEFAULT_MAX_FRAME_LEN`]
    /// (16 MiB).
    pub fn with_max_frame_len(mut self, max: usize) -> Self {
        self.max_frame_len = max;
        self
    }

    /// The maximum frame length (prefix included).
    pub fn max_frame_len(&self) -> usize {
        self.max_frame_len
    }

    /// Reads and checks the frame prefix; `Ok(None)` when fewer than 8 bytes
    /// are buffered.
    fn decode_head(&self, src: &mut BytesMut) -> Result<Option<DecodeState>, Error> {
        let Some(mut len_bytes) = src.get(..4) else {
            src.reserve(PREFIX_LEN);
            return Ok(None);
        };
        let total_len = len_bytes.get_i32();
        if total_len < 0 {
            return Err(Error::InvalidFrame(format!(
                "negative frame length {total_len}"
            )));
        }
        if total_len < 4 {
            return Err(Error::InvalidFrame(format!(
                "frame length {total_len} is too short for the 4-byte header length field"
            )));
        }
        // Like the broker, the limit counts the 4-byte prefix too.
        let frame_len = u64::from(total_len.unsigned_abs()) + 4;
        if usize::try_from(frame_len).map_or(true, |f| f > self.max_frame_len) {
            return Err(Error::FrameTooLarge {
                len: frame_len,
                max: self.max_frame_len,
            });
        }
        let len = usize::try_from(total_len).map_err(|_| {
            Error::InvalidFrame(format!("frame length {total_len} does not fit usize"))
        })?;

        let Some(mut word) = src.get(4..PREFIX_LEN) else {
            src.reserve(PREFIX_LEN.saturating_sub(src.len()));
            return Ok(None);
        };
        let word = word.get_u32();
        let type_byte = word.to_be_bytes()[0];
        let serialize_type =
            SerializeType::from_code(type_byte).ok_or(Error::UnknownSerializeType(type_byte))?;
        let header_len = usize::try_from(word & 0x00FF_FFFF)
            .map_err(|_| Error::InvalidFrame("header length does not fit usize".into()))?;
        let room = len.saturating_sub(4);
        if header_len > room {
            return Err(Error::InvalidFrame(format!(
                "header length {header_len} exceeds the {room} bytes left in the frame"
            )));
        }
        src.advance(4);
        Ok(Some(DecodeState::Data {
            len,
            header_len,
            serialize_type,
        }))
    }
}

impl HeaderFields {
    /// The command of these fields, with `body`.
    pub(super) fn into_command(
        self,
        body: Bytes,
        serialize_type: SerializeType,
    ) -> RemotingCommand {
        RemotingCommand {
            code: self.code,
            language: self.language,
            version: self.version,
            opaque: self.opaque,
            flag: self.flag,
            remark: self.remark,
            ext_fields: self.ext_fields,
            body,
            serialize_type,
        }
    }
}

/// A complete frame (header word onwards) split into its header and its
/// body (a slice of the frame).
pub(super) fn header_and_body(frame: &Bytes, header_len: usize) -> Result<(&[u8], Bytes), Error> {
    let header_end = header_len + 4;
    let header = frame
        .get(4..header_end)
        .ok_or_else(|| Error::InvalidFrame("frame shorter than its header".into()))?;
    // `header_end <= frame.len()` was checked by `get` above.
    Ok((header, frame.slice(header_end..)))
}

/// Decodes a header written in `serialize_type`.
pub(super) fn decode_header(
    header: &[u8],
    serialize_type: SerializeType,
) -> Result<HeaderFields, Error> {
    match serialize_type {
        SerializeType::Json => json::decode(header),
        SerializeType::RocketMq => binary::decode(header),
    }
}

/// Builds the command from a complete frame (header word onwards).
fn parse_frame(
    frame: Bytes,
    header_len: usize,
    serialize_type: SerializeType,
) -> Result<RemotingCommand, Error> {
    let (header, body) = header_and_body(&frame, header_len)?;
    Ok(decode_header(header, serialize_type)?.into_command(body, serialize_type))
}

/// Room read past a frame's end in the buffer [`make_room`] allocates: the
/// start of the next frame.
const READ_AHEAD: usize = 8 * 1024;

/// Makes room in `src`, which holds the start of a `len`-byte frame, for
/// the rest of it. Frames are handed out as slices of the read buffer, so
/// its allocation is usually still shared with earlier frames (their
/// message bodies): when it cannot be reused, the frame gets a buffer of
/// its own and only its start is copied (`BytesMut::reserve` would also
/// copy the earlier frames' bytes when it grows an allocation no one else
/// holds any more).
fn make_room(src: &mut BytesMut, len: usize) {
    let additional = len.saturating_sub(src.len());
    if src.capacity() >= len || src.try_reclaim(additional) {
        return;
    }
    let mut own = BytesMut::with_capacity(len.saturating_add(READ_AHEAD));
    own.extend_from_slice(src);
    *src = own;
}

impl RemotingCodec {
    /// The next whole frame in `src` made into a `T` by `parse` (given the
    /// frame from its header word on, its header length and serialize type);
    /// `None` until it has arrived.
    pub(super) fn decode_with<T>(
        &mut self,
        src: &mut BytesMut,
        parse: impl FnOnce(Bytes, usize, SerializeType) -> Result<T, Error>,
    ) -> Result<Option<T>, Error> {
        match self.decode_frame(src)? {
            Some((frame, header_len, serialize_type)) => {
                parse(frame, header_len, serialize_type).map(Some)
            }
            None => Ok(None),
        }
    }

    /// [`decode_with`](Self::decode_with) at the end of the stream: an error
    /// when part of a frame was received.
    pub(super) fn decode_eof_with<T>(
        &mut self,
        src: &mut BytesMut,
        parse: impl FnOnce(Bytes, usize, SerializeType) -> Result<T, Error>,
    ) -> Result<Option<T>, Error> {
        match self.decode_with(src, parse)? {
            Some(item) => Ok(Some(item)),
            None => self.check_eof(src).map(|()| None),
        }
    }

    /// The next whole frame in `src` (length word excluded), with its header
    /// length and serialize type; `None` until it has arrived.
    fn decode_frame(
        &mut self,
        src: &mut BytesMut,
    ) -> Result<Option<(Bytes, usize, SerializeType)>, Error> {
        let (len, header_len, serialize_type) = match self.state {
            DecodeState::Head => match self.decode_head(src)? {
                Some(DecodeState::Data {
                    len,
                    header_len,
                    serialize_type,
                }) => {
                    self.state = DecodeState::Data {
                        len,
                        header_len,
                        serialize_type,
                    };
                    (len, header_len, serialize_type)
                }
                _ => return Ok(None),
            },
            DecodeState::Data {
                len,
                header_len,
                serialize_type,
            } => (len, header_len, serialize_type),
        };
        if src.len() < len {
            make_room(src, len);
            return Ok(None);
        }
        self.state = DecodeState::Head;
        let frame = src.split_to(len).freeze();
        Ok(Some((frame, header_len, serialize_type)))
    }

    /// At the end of the stream, with no frame left to decode: an error when
    /// part of one was received.
    fn check_eof(&self, src: &BytesMut) -> Result<(), Error> {
        if src.is_empty() && matches!(self.state, DecodeState::Head) {
            Ok(())
        } else {
            Err(Error::InvalidFrame(format!(
                "stream ended inside a frame ({} bytes of it received); the peer closed the connection mid-frame",
                src.len()
            )))
        }
    }
}

impl Decoder for RemotingCodec {
    type Item = RemotingCommand;
    type Error = Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RemotingCommand>, Error> {
        self.decode_with(src, parse_frame)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<RemotingCommand>, Error> {
        self.decode_eof_with(src, parse_frame)
    }
}

#[cfg(test)]
mod tests {
    use tokio_util::codec::Encoder;

    use super::*;
    use crate::codec::testing::route_query;

    #[test]
    fn binary_worked_example_frame() {
        let mut dst = BytesMut::new();
        let cmd = route_query(SerializeType::RocketMq, LanguageCode::Rust);
        RemotingCodec::new().encode(&cmd, &mut dst).unwrap();
        assert_eq!(dst.len(), 49);
        assert_eq!(&dst[..8], &[0, 0, 0, 0x2d, 1, 0, 0, 0x29]);
        let decoded = RemotingCodec::new().decode(&mut dst).unwrap().unwrap();
        assert_eq!(decoded, cmd);
        assert!(dst.is_empty());
    }

    #[test]
    fn json_worked_example_frame() {
        let mut dst = BytesMut::new();
        let cmd = route_query(SerializeType::Json, LanguageCode::Java);
        RemotingCodec::new().encode(cmd.clone(), &mut dst).unwrap();
        assert_eq!(&dst[..8], &[0, 0, 0, 0x87, 0, 0, 0, 0x83]);
        assert_eq!(dst.len(), 8 + 131);
        assert_eq!(RemotingCodec::new().decode(&mut dst).unwrap(), Some(cmd));
    }

    #[test]
    fn frame_exactly_at_the_limit_is_accepted() {
        let cmd = route_query(SerializeType::Json, LanguageCode::Java);
        let mut codec = RemotingCodec::new().with_max_frame_len(139);
        let mut dst = BytesMut::new();
        codec.encode(&cmd, &mut dst).unwrap();
        assert_eq!(codec.decode(&mut dst).unwrap(), Some(cmd));
        let mut codec = RemotingCodec::new().with_max_frame_len(138);
        let mut dst = BytesMut::from(&[0u8, 0, 0, 0x87][..]);
        assert!(matches!(
            codec.decode(&mut dst),
            Err(Error::FrameTooLarge { len: 139, max: 138 })
        ));
    }

    #[test]
    fn eof_inside_a_frame_is_an_error() {
        let cmd = route_query(SerializeType::Json, LanguageCode::Java);
        let mut full = BytesMut::new();
        RemotingCodec::new().encode(&cmd, &mut full).unwrap();
        for cut in 1..full.len() {
            let mut codec = RemotingCodec::new();
            let mut src = BytesMut::from(&full[..cut]);
            assert!(codec.decode(&mut src).unwrap().is_none());
            assert!(
                matches!(codec.decode_eof(&mut src), Err(Error::InvalidFrame(_))),
                "cut {cut}"
            );
        }
        let mut codec = RemotingCodec::new();
        assert!(codec.decode_eof(&mut BytesMut::new()).unwrap().is_none());
    }

    /// Frames arriving in small reads, each kept (as message bodies are
    /// while they are consumed) or dropped at once: every frame decodes
    /// whole, the kept ones stay intact, and the read buffer stays about
    /// one frame large.
    #[test]
    fn frames_read_in_pieces_beside_kept_or_dropped_frames() {
        let mut frames = Vec::new();
        let mut wire = BytesMut::new();
        for i in 0..12_u8 {
            let body = Bytes::from(vec![i; 20_000 + usize::from(i) * 1_000]);
            let cmd = route_query(SerializeType::Json, LanguageCode::Java)
                .with_opaque(i32::from(i))
                .with_body(body);
            RemotingCodec::new().encode(&cmd, &mut wire).unwrap();
            frames.push(cmd);
        }
        for keep in [true, false] {
            let mut codec = RemotingCodec::new();
            let mut src = BytesMut::new();
            let mut kept = Vec::new();
            let mut decoded = 0;
            let mut largest = 0;
            let mut rest = &wire[..];
            while !rest.is_empty() {
                // As tokio-util's FramedRead reads: room for one byte, then
                // a read of what fits (here at most 4 KiB).
                src.reserve(1);
                let n = rest.len().min(4_096).min(src.capacity() - src.len());
                let (piece, after) = rest.split_at(n);
                src.extend_from_slice(piece);
                rest = after;
                while let Some((frame, _, _)) = codec.decode_frame(&mut src).unwrap() {
                    decoded += 1;
                    if keep {
                        kept.push(frame);
                    }
                }
                largest = largest.max(src.capacity());
            }
            assert!(src.is_empty());
            assert_eq!(decoded, frames.len());
            assert!(
                largest <= 32_000 + READ_AHEAD + 4_096,
                "keep {keep}: the read buffer grew to {largest} bytes"
            );
            for (frame, cmd) in kept.iter().zip(&frames) {
                let mut again = BytesMut::new();
                RemotingCodec::new().encode(cmd, &mut again).unwrap();
                assert_eq!(frame[..], again[4..], "frame {} changed", cmd.opaque);
            }
        }
    }
}
