//! [`CommandHeader`] (a typed header ↔ its ext fields), [`ExtFields`] and
//! how single values travel (decimal text, Java booleans).

use std::collections::HashMap;

use bytes::{BufMut, BytesMut};

use crate::codec::put_json_str;
use crate::error::{Error, Result};

/// The ext-field map of a command.
pub type ExtFields = HashMap<String, String>;

/// Where a typed header reads its fields from: the ext-field map, or a
/// [`RawCommand`](crate::RawCommand) that keeps them in its frame.
pub trait FieldSource {
    /// The text of field `key`, if present.
    fn field(&self, key: &str) -> Option<&str>;

    /// Every field, as a fresh map.
    fn to_ext_fields(&self) -> ExtFields;
}

impl FieldSource for ExtFields {
    fn field(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }

    fn to_ext_fields(&self) -> ExtFields {
        self.clone()
    }
}

/// A typed view of a command's ext fields.
pub trait CommandHeader: Sized {
    /// Writes every non-`None` field into `fields`.
    fn write_to(&self, fields: &mut ExtFields);

    /// Reads the header back.
    ///
    /// # Errors
    ///
    /// [`Error::MissingField`] when a required field is absent,
    /// [`Error::InvalidField`] when a value does not parse.
    fn read_from(fields: &ExtFields) -> Result<Self>;

    /// Reads the header from any [`FieldSource`]. Headers declared in this
    /// crate read each field in place; the default copies the fields into a
    /// map and calls [`read_from`](CommandHeader::read_from).
    ///
    /// # Errors
    ///
    /// As [`read_from`](CommandHeader::read_from).
    fn read_from_source<S: FieldSource + ?Sized>(fields: &S) -> Result<Self> {
        Self::read_from(&fields.to_ext_fields())
    }

    /// Appends the fields as the members of a JSON object (`"key":"value"`
    /// pairs, comma-separated, no braces): the `extFields` of a JSON header,
    /// without building the map. Returns `false` when the header cannot (the
    /// caller then uses [`write_to`](CommandHeader::write_to)); headers
    /// declared in this crate always can. Every value is a JSON string, as
    /// with the map.
    fn write_json_members(&self, dst: &mut BytesMut) -> bool {
        let _ = dst;
        false
    }

    /// The header as a fresh map.
    fn to_ext_fields(&self) -> ExtFields {
        let mut fields = ExtFields::new();
        self.write_to(&mut fields);
        fields
    }
}

/// A header with no fields of its own (e.g. HEART_BEAT, LOCK_BATCH_MQ).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EmptyHeader;

impl CommandHeader for EmptyHeader {
    fn write_to(&self, _fields: &mut ExtFields) {}

    fn write_json_members(&self, _dst: &mut BytesMut) -> bool {
        true
    }

    fn read_from(_fields: &ExtFields) -> Result<Self> {
        Ok(EmptyHeader)
    }

    fn read_from_source<S: FieldSource + ?Sized>(_fields: &S) -> Result<Self> {
        Ok(EmptyHeader)
    }
}

/// Parses a boolean the way Java's `Boolean.parseBoolean` does:
/// case-insensitive `"true"` is true, anything else false.
fn parse_java_bool(v: &str) -> bool {
    v.eq_ignore_ascii_case("true")
}

/// Whether `key` can be written into a JSON string as is (no quote,
/// backslash or control character): every header key declared with
/// `command_header!` is checked with it at compile time.
#[allow(
    dead_code,
    reason = "called only from the anonymous consts of `command_header!`, which rustc 1.85 (the MSRV) does not count as a use"
)]
pub(crate) const fn plain_json_key(key: &str) -> bool {
    let mut rest = key.as_bytes();
    while let [b, tail @ ..] = rest {
        if *b < 0x20 || *b == b'"' || *b == b'\\' {
            return false;
        }
        rest = tail;
    }
    true
}

/// One value type a header field can hold, with its Java text form.
pub(crate) trait HeaderValue: Sized {
    /// The value as Java's `toString()` writes it.
    fn to_wire(&self) -> String;
    /// The same text as a JSON string literal.
    fn write_json(&self, dst: &mut BytesMut);
    /// Parses the wire text of field `key`.
    fn from_wire(key: &'static str, text: &str) -> Result<Self>;
}

impl HeaderValue for String {
    fn to_wire(&self) -> String {
        self.clone()
    }

    fn write_json(&self, dst: &mut BytesMut) {
        put_json_str(dst, self);
    }

    fn from_wire(_key: &'static str, text: &str) -> Result<Self> {
        Ok(text.to_owned())
    }
}

impl HeaderValue for bool {
    fn to_wire(&self) -> String {
        self.to_string()
    }

    fn write_json(&self, dst: &mut BytesMut) {
        dst.put_slice(if *self { b"\"true\"" } else { b"\"false\"" });
    }

    fn from_wire(_key: &'static str, text: &str) -> Result<Self> {
        Ok(parse_java_bool(text))
    }
}

macro_rules! number_header_value {
    ($($t:ty),*) => {$(
        impl HeaderValue for $t {
            fn to_wire(&self) -> String {
                itoa::Buffer::new().format(*self).to_owned()
            }

            fn write_json(&self, dst: &mut BytesMut) {
                dst.put_u8(b'"');
                dst.put_slice(itoa::Buffer::new().format(*self).as_bytes());
                dst.put_u8(b'"');
            }

            fn from_wire(key: &'static str, text: &str) -> Result<Self> {
                text.trim().parse().map_err(|_| Error::InvalidField {
                    field: key,
                    value: text.to_owned(),
                })
            }
        }
    )*};
}

number_header_value!(i32, i64);

/// A header struct field: a required value (`T`) or an optional one
/// (`Option<T>`, omitted from the wire when `None`).
pub(crate) trait HeaderField: Sized {
    /// Writes the field under `key` (nothing for `None`).
    fn write_field(&self, fields: &mut ExtFields, key: &'static str);
    /// Appends `"key":"value"` (nothing for `None`), preceded by a comma
    /// unless `*first`; clears `*first` when it writes. `member_prefix` is
    /// `"key":`, quoted already (see [`plain_json_key`]).
    fn write_json_member(&self, dst: &mut BytesMut, member_prefix: &'static str, first: &mut bool);
    /// Reads the field from `key`.
    fn read_field(fields: &(impl FieldSource + ?Sized), key: &'static str) -> Result<Self>;
}

impl<T: HeaderValue> HeaderField for T {
    fn write_field(&self, fields: &mut ExtFields, key: &'static str) {
        fields.insert(key.to_owned(), self.to_wire());
    }

    fn write_json_member(&self, dst: &mut BytesMut, member_prefix: &'static str, first: &mut bool) {
        if !std::mem::take(first) {
            dst.put_u8(b',');
        }
        dst.put_slice(member_prefix.as_bytes());
        self.write_json(dst);
    }

    fn read_field(fields: &(impl FieldSource + ?Sized), key: &'static str) -> Result<Self> {
        let text = fields
            .field(key)
            .ok_or(Error::MissingField { field: key })?;
        T::from_wire(key, text)
    }
}

impl<T: HeaderValue> HeaderField for Option<T> {
    fn write_field(&self, fields: &mut ExtFields, key: &'static str) {
        if let Some(v) = self {
            fields.insert(key.to_owned(), v.to_wire());
        }
    }

    fn write_json_member(&self, dst: &mut BytesMut, member_prefix: &'static str, first: &mut bool) {
        if let Some(v) = self {
            v.write_json_member(dst, member_prefix, first);
        }
    }

    fn read_field(fields: &(impl FieldSource + ?Sized), key: &'static str) -> Result<Self> {
        fields
            .field(key)
            .map(|text| T::from_wire(key, text))
            .transpose()
    }
}
