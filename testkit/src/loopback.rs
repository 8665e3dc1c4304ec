//! A scripted remoting server on `127.0.0.1:0` for the transport's loopback tests: the test
//! accepts each connection and reads and answers frames itself.

use std::future::Future;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use rmq_protocol::{RemotingCodec, RemotingCommand, ResponseCode};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::codec::Framed;

/// One accepted connection, framed with the protocol codec.
pub type Peer = Framed<TcpStream, RemotingCodec>;

/// How long a test step may take before the test fails.
pub const STEP: Duration = Duration::from_secs(5);

/// Runs a whole test under a 30 s timeout, so a deadlock fails instead of hanging.
///
/// # Panics
///
/// When `f` does not finish in time.
pub async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("test timed out (deadlock?)")
}

/// A listener whose accepted connections are handed to the test.
#[derive(Debug)]
pub struct TestServer {
    /// Its address, `127.0.0.1:<port>`.
    pub addr: String,
    accepted: mpsc::UnboundedReceiver<Peer>,
    task: JoinHandle<()>,
}

impl TestServer {
    /// Listens on a free port of 127.0.0.1.
    ///
    /// # Panics
    ///
    /// When no port can be bound.
    pub async fn start() -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address").to_string();
        let (tx, accepted) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                if tx.send(Framed::new(stream, RemotingCodec::new())).is_err() {
                    break;
                }
            }
        });
        TestServer {
            addr,
            accepted,
            task,
        }
    }

    /// The next accepted connection.
    ///
    /// # Panics
    ///
    /// When none arrives within [`STEP`].
    pub async fn accept(&mut self) -> Peer {
        tokio::time::timeout(STEP, self.accepted.recv())
            .await
            .expect("no connection accepted in time")
            .expect("accept loop ended")
    }

    /// Whether a further connection arrives within `wait`.
    pub async fn accepts_within(&mut self, wait: Duration) -> bool {
        tokio::time::timeout(wait, self.accepted.recv())
            .await
            .is_ok()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The next frame from the client.
///
/// # Panics
///
/// When none arrives within [`STEP`], or the client closed or sent garbage.
pub async fn next_frame(peer: &mut Peer) -> RemotingCommand {
    tokio::time::timeout(STEP, peer.next())
        .await
        .expect("no frame in time")
        .expect("client closed the connection")
        .expect("client sent an undecodable frame")
}

/// Sends one frame to the client.
///
/// # Panics
///
/// When the write fails.
pub async fn send(peer: &mut Peer, cmd: RemotingCommand) {
    peer.send(cmd).await.expect("frame sent to the client");
}

/// SUCCESS response echoing the request's body.
pub fn echo(req: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(req, ResponseCode::SUCCESS, None).with_body(req.body.clone())
}

/// Answers every request with [`echo`] until the client disconnects.
pub fn serve_echo(mut peer: Peer) -> JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(Ok(req)) = peer.next().await {
            if !req.is_oneway() && peer.send(echo(&req)).await.is_err() {
                break;
            }
        }
    })
}

/// Waits until the client closes the connection (EOF or reset).
///
/// # Panics
///
/// On any frame received meanwhile, or when the client keeps it open for [`STEP`].
pub async fn expect_eof(peer: &mut Peer) {
    match tokio::time::timeout(STEP, peer.next()).await {
        Ok(None | Some(Err(_))) => {}
        Ok(Some(Ok(cmd))) => panic!("expected EOF, got a frame: {cmd:?}"),
        Err(_) => panic!("the client did not close the connection"),
    }
}
