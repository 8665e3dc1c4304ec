//! Helpers of the codec's unit tests: the route query of the reference
//! examples, in either header format.

use super::frame::HeaderFields;
use crate::code::{LanguageCode, RequestCode, SerializeType};
use crate::command::RemotingCommand;

/// GET_ROUTEINFO_BY_TOPIC for `TopicTest` (opaque 1, version 479) as a
/// client of `language` writes it in `serialize_type`.
pub(super) fn route_query(
    serialize_type: SerializeType,
    language: LanguageCode,
) -> RemotingCommand {
    let mut cmd = RemotingCommand::new_request(RequestCode::GET_ROUTEINFO_BY_TOPIC)
        .with_opaque(1)
        .with_ext_field("topic", "TopicTest")
        .with_serialize_type(serialize_type);
    cmd.language = language;
    cmd.version = 479;
    cmd
}

/// Asserts that `h` is the header of [`route_query`] written by `language`.
pub(super) fn assert_route_query(h: &HeaderFields, language: LanguageCode) {
    assert_eq!(h.code, 105);
    assert_eq!(h.language, language);
    assert_eq!(h.version, 479);
    assert_eq!(h.opaque, 1);
    assert_eq!(h.flag, 0);
    assert_eq!(h.remark, None);
    assert_eq!(h.ext_fields.len(), 1);
    assert_eq!(h.ext_fields["topic"], "TopicTest");
}
