//! [`RemotingCodec`]: the tokio-util `Decoder`/`Encoder` for remoting frames.
//!
//! (Stub: being filled in.)

use bytes::BytesMut;
use tokio_util::codec::{Decoder, Encoder};

use crate::command::RemotingCommand;
use crate::error::Error;

/// The default maximum frame length: 16 MiB, the broker's `frameMaxLength`.
pub const DEFAULT_MAX_FRAME_LEN: usize = 16 * 1024 * 1024;

/// Frame codec for [`RemotingCommand`]s.
#[derive(Debug, Clone)]
pub struct RemotingCodec {
    max_frame_len: usize,
}

impl Default for RemotingCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl RemotingCodec {
    /// A codec with the default maximum frame length.
    pub fn new() -> Self {
        RemotingCodec {
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
        }
    }

    /// Sets the maximum frame length (prefix included), for both directions.
    pub fn with_max_frame_len(mut self, max: usize) -> Self {
        self.max_frame_len = max;
        self
    }

    /// The maximum frame length.
    pub fn max_frame_len(&self) -> usize {
        self.max_frame_len
    }
}

impl Decoder for RemotingCodec {
    type Item = RemotingCommand;
    type Error = Error;

    fn decode(&mut self, _src: &mut BytesMut) -> Result<Option<RemotingCommand>, Error> {
        Err(Error::InvalidFrame("codec not implemented yet".into()))
    }
}

impl Encoder<RemotingCommand> for RemotingCodec {
    type Error = Error;

    fn encode(&mut self, _item: RemotingCommand, _dst: &mut BytesMut) -> Result<(), Error> {
        Err(Error::Encode("codec not implemented yet".into()))
    }
}
