//! [`CommandHeader`] (a typed header ↔ its ext fields), [`ExtFields`] and
//! how single values travel (decimal text, Java booleans).

use std::collections::HashMap;

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

/// Parses a boolean the way Java's `Boolean.parseBoolean` does:
/// case-insensitive `"true"` is true, anything else false.
fn parse_java_bool(v: &str) -> bool {
    v.eq_ignore_ascii_case("true")
}

/// One value type a header field can hold, with its Java text form.
pub(crate) trait HeaderValue: Sized {
    /// The value as Java's `toString()` writes it.
    fn to_wire(&self) -> String;
    /// Parses the wire text of field `key`.
    fn from_wire(key: &'static str, text: &str) -> Result<Self>;
}

impl HeaderValue for String {
    fn to_wire(&self) -> String {
        self.clone()
    }

    fn from_wire(_key: &'static str, text: &str) -> Result<Self> {
        Ok(text.to_owned())
    }
}

impl HeaderValue for bool {
    fn to_wire(&self) -> String {
        self.to_string()
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
    /// Reads the field from `key`.
    fn read_field(fields: &ExtFields, key: &'static str) -> Result<Self>;
}

impl<T: HeaderValue> HeaderField for T {
    fn write_field(&self, fields: &mut ExtFields, key: &'static str) {
        fields.insert(key.to_owned(), self.to_wire());
    }

    fn read_field(fields: &ExtFields, key: &'static str) -> Result<Self> {
        let text = fields.get(key).ok_or(Error::MissingField { field: key })?;
        T::from_wire(key, text)
    }
}

impl<T: HeaderValue> HeaderField for Option<T> {
    fn write_field(&self, fields: &mut ExtFields, key: &'static str) {
        if let Some(v) = self {
            fields.insert(key.to_owned(), v.to_wire());
        }
    }

    fn read_field(fields: &ExtFields, key: &'static str) -> Result<Self> {
        fields
            .get(key)
            .map(|text| T::from_wire(key, text))
            .transpose()
    }
}
