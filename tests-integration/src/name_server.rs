//! Name servers that do not answer, for the fail-fast tests of the clients' starts.

use tokio::net::TcpListener;

/// A name server that accepts connections and never answers: its address and the task that
/// keeps the connections open (they close when it is dropped or aborted).
///
/// # Panics
///
/// When no loopback port can be bound (a test environment fault).
pub async fn silent() -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (addr, task)
}

/// An address nothing listens on (bound, then closed): connections are refused.
///
/// # Panics
///
/// When no loopback port can be bound (a test environment fault).
pub fn refusing() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").to_string()
}
