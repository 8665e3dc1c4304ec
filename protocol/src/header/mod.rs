//! Typed command headers and their conversion to and from ext fields.
//!
//! Every request header the client sends or receives is a struct
//! implementing [`CommandHeader`]. Field names on the wire are the Java
//! field names; numbers and booleans travel as decimal text and
//! `true`/`false` (Java `toString()`), optional fields are omitted when
//! `None`.

use std::collections::HashMap;
use std::str::FromStr;

use crate::error::{Error, Result};

/// The ext-field map of a command.
pub type ExtFields = HashMap<String, String>;

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

    fn read_from(_fields: &ExtFields) -> Result<Self> {
        Ok(EmptyHeader)
    }
}

/// Reads a required string field.
pub(crate) fn req_str(fields: &ExtFields, key: &'static str) -> Result<String> {
    fields
        .get(key)
        .cloned()
        .ok_or(Error::MissingField { field: key })
}

/// Reads an optional string field.
pub(crate) fn opt_str(fields: &ExtFields, key: &'static str) -> Option<String> {
    fields.get(key).cloned()
}

/// Reads a required field parsed with `FromStr` (numbers; booleans use [`req_bool`]).
pub(crate) fn req_parse<T: FromStr>(fields: &ExtFields, key: &'static str) -> Result<T> {
    let v = fields.get(key).ok_or(Error::MissingField { field: key })?;
    v.trim().parse().map_err(|_| Error::InvalidField {
        field: key,
        value: v.clone(),
    })
}

/// Reads an optional field parsed with `FromStr`.
pub(crate) fn opt_parse<T: FromStr>(fields: &ExtFields, key: &'static str) -> Result<Option<T>> {
    match fields.get(key) {
        None => Ok(None),
        Some(v) => v.trim().parse().map(Some).map_err(|_| Error::InvalidField {
            field: key,
            value: v.clone(),
        }),
    }
}

/// Parses a boolean the way Java's `Boolean.parseBoolean` does:
/// case-insensitive `"true"` is true, anything else false.
pub(crate) fn parse_java_bool(v: &str) -> bool {
    v.eq_ignore_ascii_case("true")
}

/// Reads an optional boolean field (Java semantics).
pub(crate) fn opt_bool(fields: &ExtFields, key: &'static str) -> Option<bool> {
    fields.get(key).map(|v| parse_java_bool(v))
}

/// Reads a required boolean field (Java semantics).
pub(crate) fn req_bool(fields: &ExtFields, key: &'static str) -> Result<bool> {
    fields
        .get(key)
        .map(|v| parse_java_bool(v))
        .ok_or(Error::MissingField { field: key })
}

/// Writes `value` under `key`.
pub(crate) fn put<T: ToString>(fields: &mut ExtFields, key: &str, value: &T) {
    fields.insert(key.to_owned(), value.to_string());
}

/// Writes `value` under `key` when it is `Some`.
pub(crate) fn put_opt<T: ToString>(fields: &mut ExtFields, key: &str, value: &Option<T>) {
    if let Some(v) = value {
        fields.insert(key.to_owned(), v.to_string());
    }
}
