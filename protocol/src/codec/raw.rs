//! [`RawCommand`]: a decoded frame whose ext fields stay where they are in
//! the frame until someone asks for them.
//!
//! Decoding a [`RemotingCommand`] builds its ext-field map: a `String` per
//! key and per value, and a hash insert each. A caller that reads a few
//! fields into a typed header once (a pull or send answer) pays that for
//! nothing. A [`RawCommand`] keeps a JSON header's ext fields as positions in
//! the frame and reads a typed header straight from them
//! ([`RawCommand::decode_header`]); [`RawCommand::into_command`] builds the
//! same [`RemotingCommand`] the map decoder would have.
//!
//! A small scanner (`json_scan`) reads headers the way brokers write them.
//! Any other header, and every binary header, is decoded by the map decoder,
//! so its rules and its errors hold unchanged.

use std::fmt;

use bytes::{Bytes, BytesMut};
use bytestring::ByteString;
use tokio_util::codec::Decoder;

use crate::code::{RequestCode, ResponseCode, SerializeType};
use crate::command::{FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand};
use crate::error::{Error, Result};
use crate::header::{CommandHeader, FieldSource};

use super::frame::{RemotingCodec, decode_header, header_and_body};
use super::json_scan::{JsonFields, scan_json};

/// A decoded command whose ext fields are read on demand. Made by
/// [`RawCodec`].
///
/// Decoding a [`RemotingCommand`] builds its ext-field map: a `String` per
/// key and per value, and a hash insert each. A `RawCommand` keeps a JSON
/// header's fields as positions in the frame, reads a typed header straight from them
/// ([`decode_header`](Self::decode_header)), and converts into the very
/// command the map decoder makes ([`into_command`](Self::into_command)).
/// Binary headers, and JSON headers other than the plain ones brokers
/// write, are decoded by the map decoder.
#[derive(Clone)]
pub struct RawCommand {
    /// The command; its `ext_fields` are empty when `json` holds them.
    cmd: RemotingCommand,
    /// The `extFields` of a JSON header read by the scanner, as positions.
    json: Option<JsonFields>,
}

impl RawCommand {
    /// Request or response code.
    pub fn code(&self) -> i32 {
        self.cmd.code
    }

    /// The code read as a request code.
    pub fn request_code(&self) -> RequestCode {
        self.cmd.request_code()
    }

    /// The code read as a response code.
    pub fn response_code(&self) -> ResponseCode {
        self.cmd.response_code()
    }

    /// Request id; a response repeats its request's value.
    pub fn opaque(&self) -> i32 {
        self.cmd.opaque
    }

    /// The flag bits ([`FLAG_RESPONSE`], [`FLAG_ONEWAY`]).
    pub fn flag(&self) -> i32 {
        self.cmd.flag
    }

    /// Whether this is a response (flag bit 0).
    pub fn is_response(&self) -> bool {
        self.cmd.flag & FLAG_RESPONSE != 0
    }

    /// Whether this is a oneway request (flag bit 1).
    pub fn is_oneway(&self) -> bool {
        self.cmd.flag & FLAG_ONEWAY != 0
    }

    /// The remark, if any.
    pub fn remark(&self) -> Option<&str> {
        self.cmd.remark.as_deref()
    }

    /// The body; empty when the frame has none.
    pub fn body(&self) -> &Bytes {
        &self.cmd.body
    }

    /// Takes the body out, leaving an empty one.
    pub fn take_body(&mut self) -> Bytes {
        std::mem::take(&mut self.cmd.body)
    }

    /// One ext field's value; when a key appears twice, the later entry
    /// (as in the map).
    pub fn ext_field(&self, key: &str) -> Option<&str> {
        match &self.json {
            None => self.cmd.ext_fields.get(key).map(String::as_str),
            Some(json) => json.get(key),
        }
    }

    /// Decodes the ext fields as the typed header `H`, without building the
    /// map for headers declared in this crate.
    ///
    /// # Errors
    ///
    /// As [`RemotingCommand::decode_header`].
    pub fn decode_header<H: CommandHeader>(&self) -> Result<H> {
        H::read_from_source(self)
    }

    /// The command the map decoder makes of the same frame.
    pub fn into_command(self) -> RemotingCommand {
        let mut cmd = self.cmd;
        if let Some(json) = self.json {
            cmd.ext_fields = json.into_map();
        }
        cmd
    }
}

impl FieldSource for RawCommand {
    fn field(&self, key: &str) -> Option<&str> {
        self.ext_field(key)
    }

    fn to_ext_fields(&self) -> crate::header::ExtFields {
        match &self.json {
            None => self.cmd.ext_fields.clone(),
            Some(json) => json
                .iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        }
    }
}

impl From<RemotingCommand> for RawCommand {
    fn from(cmd: RemotingCommand) -> Self {
        RawCommand { cmd, json: None }
    }
}

impl fmt::Debug for RawCommand {
    /// The ext fields as a map, like [`RemotingCommand`]'s.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut fields: Vec<(&str, &str)> = match &self.json {
            None => self
                .cmd
                .ext_fields
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
            Some(json) => json.iter().collect(),
        };
        fields.sort_unstable();
        f.debug_struct("RawCommand")
            .field("code", &self.cmd.code)
            .field("language", &self.cmd.language)
            .field("version", &self.cmd.version)
            .field("opaque", &self.cmd.opaque)
            .field("flag", &self.cmd.flag)
            .field("remark", &self.cmd.remark)
            .field("ext_fields", &fields)
            .field("body_len", &self.cmd.body.len())
            .field("serialize_type", &self.cmd.serialize_type)
            .finish()
    }
}

/// Decodes frames as [`RawCommand`]s; the framing (and its limits) is
/// [`RemotingCodec`]'s.
#[derive(Debug, Clone, Default)]
pub struct RawCodec {
    inner: RemotingCodec,
}

impl From<RemotingCodec> for RawCodec {
    fn from(inner: RemotingCodec) -> Self {
        RawCodec { inner }
    }
}

impl Decoder for RawCodec {
    type Item = RawCommand;
    type Error = Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RawCommand>, Error> {
        self.inner.decode_with(src, parse_raw)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<RawCommand>, Error> {
        self.inner.decode_eof_with(src, parse_raw)
    }
}

/// Splits a whole frame (length word excluded) into a [`RawCommand`].
fn parse_raw(
    frame: Bytes,
    header_len: usize,
    serialize_type: SerializeType,
) -> Result<RawCommand, Error> {
    let (header, body) = header_and_body(&frame, header_len)?;
    if serialize_type == SerializeType::Json {
        // The one UTF-8 check of the header: every string in it is then valid
        // text (its quotes are ASCII), read by slicing.
        if let Ok(text) = ByteString::try_from(frame.slice_ref(header)) {
            if let Some((top, fields)) = scan_json(&text) {
                return Ok(RawCommand {
                    cmd: top.into_command(body, serialize_type),
                    json: Some(JsonFields::new(text, fields)),
                });
            }
        }
    }
    let h = decode_header(header, serialize_type)?;
    Ok(RawCommand::from(h.into_command(body, serialize_type)))
}
