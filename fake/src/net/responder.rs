//! The [`Responder`] every answer goes out through (with what a fault asked
//! for), and the response builders.

use std::sync::Arc;
use std::time::Duration;

use rmq_protocol::header::CommandHeader;
use rmq_protocol::{FLAG_RESPONSE, LanguageCode, RemotingCommand, ResponseCode, SerializeType};

use super::ConnShared;
use crate::config::BrokerFlavor;

/// What a fault asks to do with the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Post {
    None,
    Rewrite(ResponseCode),
    Delay(Duration),
    Drop,
}

/// Sends the answer to one request: sets its opaque, flags, version and
/// header type, and applies what a fault asked for.
#[derive(Debug)]
pub(crate) struct Responder {
    conn: Arc<ConnShared>,
    opaque: i32,
    oneway: bool,
    serialize_type: SerializeType,
    post: Post,
}

impl Responder {
    pub(crate) fn new(conn: Arc<ConnShared>, request: &RemotingCommand, post: Post) -> Self {
        Responder {
            conn,
            opaque: request.opaque,
            oneway: request.is_oneway(),
            serialize_type: request.serialize_type,
            post,
        }
    }

    /// Sends `response` (nothing for a oneway request).
    pub(crate) async fn respond(self, mut response: RemotingCommand) {
        if self.oneway {
            return;
        }
        response.opaque = self.opaque;
        response.flag = FLAG_RESPONSE;
        response.language = LanguageCode::Java;
        response.version = self.conn.flavor.version_ordinal();
        // 4.9.x answers in the request's header type; 5.x in its own (JSON).
        response.serialize_type = match self.conn.flavor {
            BrokerFlavor::V4_9 => self.serialize_type,
            _ => SerializeType::Json,
        };
        match self.post {
            Post::None => {
                self.conn.send(response).await;
            }
            Post::Rewrite(code) => {
                response.code = code.0;
                self.conn.send(response).await;
            }
            Post::Drop => {}
            Post::Delay(d) => {
                let conn = Arc::clone(&self.conn);
                self.conn.spawn(async move {
                    tokio::time::sleep(d).await;
                    conn.send(response).await;
                });
            }
        }
    }
}

/// A response with `code` and `remark` (opaque and flags are the
/// responder's job).
pub(crate) fn response(code: ResponseCode, remark: impl Into<Option<String>>) -> RemotingCommand {
    RemotingCommand::new_response(code, remark.into())
}

/// A response with `code` carrying `header`'s fields.
pub(crate) fn response_with<H: CommandHeader>(code: ResponseCode, header: &H) -> RemotingCommand {
    let mut cmd = RemotingCommand::new_response(code, None);
    header.write_to(&mut cmd.ext_fields);
    cmd
}
