//! `command_header!`: declares a header struct and its [`CommandHeader`]
//! impl from one field list.
//!
//! Each field is `name: Type => "wireName"`. A plain type (`String`, `i32`,
//! `i64`, `bool`, [`BoundaryType`]) is required: reading fails with
//! [`Error::MissingField`] when the key is absent. `Option<T>` is optional and
//! omitted from the wire when `None`.
//!
//! [`CommandHeader`]: super::CommandHeader
//! [`BoundaryType`]: super::BoundaryType
//! [`Error::MissingField`]: crate::Error::MissingField

macro_rules! command_header {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                pub $field:ident : $ty:ty => $wire:literal,
            )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $(
                $(#[$fmeta])*
                #[doc = ""]
                #[doc = concat!("Wire key: `", $wire, "`.")]
                pub $field: $ty,
            )*
        }

        // `write_json_members` writes each key as is: none may need escaping.
        const _: () = {
            $(
                assert!($crate::header::plain_json_key($wire));
            )*
        };

        impl $crate::header::CommandHeader for $name {
            fn write_to(&self, fields: &mut $crate::header::ExtFields) {
                // One allocation for every field instead of growing (and
                // rehashing) as they are inserted.
                fields.reserve([$($wire),*].len());
                $(
                    $crate::header::HeaderField::write_field(&self.$field, fields, $wire);
                )*
            }

            fn write_json_members(&self, dst: &mut ::bytes::BytesMut) -> bool {
                let mut first = true;
                $(
                    $crate::header::HeaderField::write_json_member(
                        &self.$field,
                        dst,
                        concat!("\"", $wire, "\":"),
                        &mut first,
                    );
                )*
                let _ = first;
                true
            }

            fn read_from(fields: &$crate::header::ExtFields) -> $crate::Result<Self> {
                Ok($name {
                    $(
                        $field: $crate::header::HeaderField::read_field(fields, $wire)?,
                    )*
                })
            }

            fn read_from_source<S: $crate::header::FieldSource + ?Sized>(
                fields: &S,
            ) -> $crate::Result<Self> {
                Ok($name {
                    $(
                        $field: $crate::header::HeaderField::read_field(fields, $wire)?,
                    )*
                })
            }
        }
    };
}
