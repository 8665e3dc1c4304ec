//! [`RemotingCommand`]: one request or response frame.

use std::collections::HashMap;

use bytes::Bytes;

use crate::code::{LanguageCode, RequestCode, ResponseCode, SerializeType};
use crate::error::Result;
use crate::header::CommandHeader;

/// Flag bit 0: the command is a response.
pub const FLAG_RESPONSE: i32 = 0x1;
/// Flag bit 1: the command is a oneway request (no response is sent).
pub const FLAG_ONEWAY: i32 = 0x2;

/// One remoting command: a request or a response, with its header fields and body.
///
/// `code` is a [`RequestCode`] for requests and a [`ResponseCode`] for
/// responses; see [`RemotingCommand::request_code`] and
/// [`RemotingCommand::response_code`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotingCommand {
    /// Request or response code.
    pub code: i32,
    /// The sender's language.
    pub language: LanguageCode,
    /// The sender's `MQVersion` ordinal.
    pub version: i32,
    /// Request id; a response repeats its request's value.
    pub opaque: i32,
    /// Bit field: [`FLAG_RESPONSE`], [`FLAG_ONEWAY`].
    pub flag: i32,
    /// Optional text (error explanations in responses).
    pub remark: Option<String>,
    /// The custom header fields, every value a string.
    pub ext_fields: HashMap<String, String>,
    /// The body; empty when the frame has none.
    pub body: Bytes,
    /// How the header was (or will be) serialized.
    pub serialize_type: SerializeType,
}

impl RemotingCommand {
    /// The `version` this client sends: 401 (`V4_9_4`). Name servers ≥ 4.9.4
    /// answer with standard JSON route data, and brokers ≥ 5.2 never answer
    /// GO_AWAY to it (they only do so above 441).
    pub const CLIENT_VERSION: i32 = 401;

    /// A request with no header fields and no body.
    pub fn new_request(code: RequestCode) -> Self {
        RemotingCommand {
            code: code.0,
            language: LanguageCode::Rust,
            version: Self::CLIENT_VERSION,
            opaque: 0,
            flag: 0,
            remark: None,
            ext_fields: HashMap::new(),
            body: Bytes::new(),
            serialize_type: SerializeType::Json,
        }
    }

    /// A request carrying `header`'s fields.
    pub fn request<H: CommandHeader>(code: RequestCode, header: &H) -> Self {
        let mut cmd = Self::new_request(code);
        header.write_to(&mut cmd.ext_fields);
        cmd
    }

    /// A response with `code` and an optional remark; the opaque is 0 until
    /// [`RemotingCommand::with_opaque`] (or the answering side) sets it.
    pub fn new_response(code: ResponseCode, remark: Option<String>) -> Self {
        RemotingCommand {
            code: code.0,
            language: LanguageCode::Rust,
            version: Self::CLIENT_VERSION,
            opaque: 0,
            flag: FLAG_RESPONSE,
            remark,
            ext_fields: HashMap::new(),
            body: Bytes::new(),
            serialize_type: SerializeType::Json,
        }
    }

    /// A response to `request`: same opaque, response flag set.
    pub fn response_to(
        request: &RemotingCommand,
        code: ResponseCode,
        remark: Option<String>,
    ) -> Self {
        Self::new_response(code, remark).with_opaque(request.opaque)
    }

    /// Sets the body.
    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// Sets the opaque.
    pub fn with_opaque(mut self, opaque: i32) -> Self {
        self.opaque = opaque;
        self
    }

    /// Adds one ext field.
    pub fn with_ext_field(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.ext_fields.insert(key.into(), value.into());
        self
    }

    /// Sets the header serialization used when this command is encoded.
    pub fn with_serialize_type(mut self, serialize_type: SerializeType) -> Self {
        self.serialize_type = serialize_type;
        self
    }

    /// Whether this is a response (flag bit 0).
    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    /// Whether this is a oneway request (flag bit 1).
    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    /// Marks this request oneway.
    pub fn set_oneway(&mut self) {
        self.flag |= FLAG_ONEWAY;
    }

    /// The code read as a request code.
    pub fn request_code(&self) -> RequestCode {
        RequestCode(self.code)
    }

    /// The code read as a response code.
    pub fn response_code(&self) -> ResponseCode {
        ResponseCode(self.code)
    }

    /// Decodes the ext fields as the typed header `H`.
    ///
    /// # Errors
    ///
    /// [`crate::Error::MissingField`] or [`crate::Error::InvalidField`] when
    /// a required field is absent or a value does not parse.
    pub fn decode_header<H: CommandHeader>(&self) -> Result<H> {
        H::read_from(&self.ext_fields)
    }

    /// One ext field's value.
    pub fn ext_field(&self, key: &str) -> Option<&str> {
        self.ext_fields.get(key).map(String::as_str)
    }
}
