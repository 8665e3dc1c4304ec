//! `rtt-floor`: what one request/response round trip costs a tokio client on this machine, with
//! no RocketMQ in it. The floor under every scenario whose cost is one round trip per message: a
//! consumer at a low rate (each long-polling pull is answered with about one message) and a
//! synchronous producer (each send waits for its answer).
//!
//! A server on loopback (plain threads, blocking I/O, `floor-srv*`) answers each request frame
//! with a response frame of `--response-bytes`, paced to `--rate` answers per second (0: at
//! once). The client runs on its own runtime (`floor-client` threads; `--runtime` and
//! `--workers` as elsewhere) and keeps `--queues` requests outstanding, one per queue, sending
//! the next request of a queue when its answer arrives, until `--count` answers came back. Four
//! clients:
//!
//! - `single`: one task reads the answers and writes the next requests (the least a tokio client
//!   can do per round trip: the reactor's wake-up, a read, a write);
//! - `tasks`: the shape of a multiplexing client such as rmq's remoting layer and push consumer:
//!   a reader task completes a `oneshot` per request found by its id in a map, one task per
//!   queue awaits it (under a timeout), hands the body to a consumer task over a channel and
//!   sends the next request to a writer task over another;
//! - `direct`: `tasks` with each queue task writing its own requests (under an async lock on
//!   the socket's write half) instead of handing them to the writer task;
//! - `callers`: the least a client whose callers each await their own answer can do (a
//!   synchronous producer's shape: `send(msg).await` in a task per sender): one task per
//!   outstanding request hands its request to one connection task over a channel and is woken
//!   by a `oneshot` when the connection task reads its answer; the connection task reads and
//!   writes (no separate reader and writer tasks, no consumer task).
//!
//! The result line gives the client's CPU per answer (`cpu_us_per_msg`, the client threads'
//! schedstat time over the run) beside the server's.
//!
//! Frames: a 4-byte big-endian length of the rest, then a 4-byte request id and a 4-byte queue
//! index, then padding.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex, mpsc as std_mpsc};
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use crate::args::Flags;
use crate::error::{BenchError, Result};
use crate::procfs::{split_cpu, thread_cpu};
use crate::stats::result_line;

/// Thread-name prefix of the server's threads.
const SERVER_THREADS: &str = "floor-srv";
/// Thread name of the client's runtime.
const CLIENT_THREADS: &str = "floor-client";
/// Length prefix, request id, queue index.
const FRAME_HEAD: usize = 12;
/// How long a request may wait for its answer in the `tasks` client.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The client's task layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    /// One task reads and writes.
    Single,
    /// Reader, a task per queue, writer, consumer.
    Tasks,
    /// Reader, a task per queue writing its own requests under a lock, consumer.
    Direct,
    /// A task per outstanding request, one connection task that reads and writes.
    Callers,
}

/// The run's settings.
#[derive(Debug, Clone, Copy)]
struct Settings {
    client: Client,
    rate: u64,
    queues: u32,
    count: u64,
    request_bytes: usize,
    response_bytes: usize,
}

fn io_error(what: &'static str) -> impl FnOnce(std::io::Error) -> BenchError {
    move |e| BenchError::Other(format!("{what}: {e}"))
}

/// A frame of `total` bytes (at least the head) carrying `id` and `queue`.
fn frame(total: usize, id: u32, queue: u32) -> Bytes {
    let total = total.max(FRAME_HEAD);
    let mut buf = BytesMut::with_capacity(total);
    buf.put_u32(u32::try_from(total - 4).unwrap_or(u32::MAX));
    buf.put_u32(id);
    buf.put_u32(queue);
    buf.resize(total, b'x');
    buf.freeze()
}

/// Splits one whole frame off `buf`: its id, queue and the frame after the length.
fn next_frame(buf: &mut BytesMut) -> Option<(u32, u32, Bytes)> {
    let len = usize::try_from(u32::from_be_bytes(buf.get(..4)?.try_into().ok()?)).ok()?;
    if buf.len() < 4 + len || len < 8 {
        return None;
    }
    buf.advance(4);
    let mut body = buf.split_to(len).freeze();
    let id = body.get_u32();
    let queue = body.get_u32();
    Some((id, queue, body))
}

/// `rtt-floor --client single|tasks|direct|callers --count N [--rate 5000] [--queues 8] [--request-bytes 300]
/// [--response-bytes 1400] [--runtime multi-thread|current-thread] [--workers W]`; builds its
/// own runtime.
pub(crate) fn rtt_floor(flags: &Flags) -> Result<()> {
    let client: String = flags.get("client", "tasks".to_owned())?;
    let kind = match client.as_str() {
        "tasks" => Client::Tasks,
        "direct" => Client::Direct,
        "single" => Client::Single,
        "callers" => Client::Callers,
        other => {
            return Err(BenchError::Args(format!(
                "--client {other}: expected single, tasks, direct or callers"
            )));
        }
    };
    let s = Settings {
        client: kind,
        rate: flags.get("rate", 5000)?,
        queues: flags.get("queues", 8)?,
        count: flags.required("count")?,
        request_bytes: flags.get("request-bytes", 300)?,
        response_bytes: flags.get("response-bytes", 1400)?,
    };
    if s.count == 0 || s.queues == 0 {
        return Err(BenchError::Args(
            "--count and --queues must be positive".into(),
        ));
    }
    let runtime_kind: String = flags.get("runtime", "multi-thread".to_owned())?;
    let mut builder = flags.runtime_builder()?;
    if let Some(w) = flags.optional::<usize>("workers")? {
        // A multi-thread runtime's workers (a current-thread one ignores it).
        builder.worker_threads(w.max(1));
    }
    let runtime = builder
        .thread_name(CLIENT_THREADS)
        .thread_keep_alive(Duration::from_secs(3600))
        .enable_all()
        .build()
        .map_err(io_error("cannot start the client runtime"))?;

    // The server's threads live until the CPU is read (an exited thread's time is gone).
    let (stop, stop_rx) = std_mpsc::channel::<()>();
    let listener = TcpListener::bind("127.0.0.1:0").map_err(io_error("binding the server"))?;
    let addr = listener
        .local_addr()
        .map_err(io_error("the server's address"))?;
    let server = std::thread::Builder::new()
        .name(format!("{SERVER_THREADS}-main"))
        .spawn(move || serve(&listener, s, &stop_rx))
        .map_err(io_error("starting the server thread"))?;

    let before = thread_cpu();
    let started = Instant::now();
    let outcome = runtime.block_on(async move {
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(io_error("connecting to the server"))?;
        stream.set_nodelay(true).map_err(io_error("TCP_NODELAY"))?;
        let run = tokio::spawn(async move {
            match s.client {
                Client::Single => client_single(stream, s).await,
                Client::Tasks | Client::Direct => client_tasks(stream, s).await,
                Client::Callers => client_callers(stream, s).await,
            }
        });
        run.await
            .map_err(|e| BenchError::Other(format!("client task: {e}")))?
    });
    let elapsed = started.elapsed().as_secs_f64();
    let after = thread_cpu();
    drop(stop);
    outcome?;
    let _ = server.join();

    // Every thread but the server's is the client's: its runtime's workers, and the main
    // thread, which runs the tasks of a current-thread runtime.
    let (server0, client0) = split_cpu(&before, SERVER_THREADS);
    let (server1, client1) = split_cpu(&after, SERVER_THREADS);
    let client_cpu = client1 - client0;
    #[allow(clippy::cast_precision_loss)]
    let per = |cpu_s: f64| cpu_s / s.count as f64 * 1e6;
    #[allow(clippy::cast_precision_loss)]
    let rate = s.count as f64 / elapsed;
    let line = serde_json::json!({
        "client": format!("floor-{client}"),
        "runtime": runtime_kind,
        "rate_target": s.rate,
        "queues": s.queues,
        "count": s.count,
        "elapsed_s": elapsed,
        "msgs_per_s": rate,
        "client_cpu_s": client_cpu,
        "cpu_us_per_msg": per(client_cpu),
        "server_cpu_us_per_msg": per(server1 - server0),
    });
    println!("{}", result_line(&line));
    Ok(())
}

/// Accepts one client; a reader thread queues the requests it reads, this thread answers them
/// in order, paced to `rate` answers per second, `count` answers in all, then waits for `stop`.
fn serve(listener: &TcpListener, s: Settings, stop: &std_mpsc::Receiver<()>) -> Result<()> {
    let (stream, _) = listener
        .accept()
        .map_err(io_error("accepting the client"))?;
    stream.set_nodelay(true).map_err(io_error("TCP_NODELAY"))?;
    let mut reader = stream.try_clone().map_err(io_error("cloning the socket"))?;
    let (tx, rx) = std_mpsc::channel::<(u32, u32)>();
    std::thread::Builder::new()
        .name(format!("{SERVER_THREADS}-read"))
        .spawn(move || {
            let mut buf = BytesMut::with_capacity(64 * 1024);
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                let n = match reader.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
                while let Some((id, queue, _)) = next_frame(&mut buf) {
                    if tx.send((id, queue)).is_err() {
                        return;
                    }
                }
            }
        })
        .map_err(io_error("starting the server's reader"))?;
    let mut writer = stream;
    let interval = (s.rate > 0).then(|| {
        Duration::from_secs_f64(1.0 / f64::from(u32::try_from(s.rate).unwrap_or(u32::MAX)))
    });
    let mut due = Instant::now();
    for _ in 0..s.count {
        let Ok((id, queue)) = rx.recv() else {
            break;
        };
        if let Some(interval) = interval {
            due += interval;
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        let answer = frame(s.response_bytes, id, queue);
        writer
            .write_all(&answer)
            .map_err(io_error("writing an answer"))?;
    }
    let _ = stop.recv();
    Ok(())
}

/// One task: reads the answers and writes each queue's next request.
async fn client_single(mut stream: tokio::net::TcpStream, s: Settings) -> Result<()> {
    let mut out = BytesMut::new();
    let mut id = 0u32;
    for queue in 0..s.queues {
        id = id.wrapping_add(1);
        out.extend_from_slice(&frame(s.request_bytes, id, queue));
    }
    stream
        .write_all_buf(&mut out)
        .await
        .map_err(io_error("writing requests"))?;
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut answered = 0u64;
    while answered < s.count {
        if stream
            .read_buf(&mut buf)
            .await
            .map_err(io_error("reading answers"))?
            == 0
        {
            return Err(BenchError::Other("the server closed the connection".into()));
        }
        while let Some((_, queue, body)) = next_frame(&mut buf) {
            std::hint::black_box(body);
            answered += 1;
            id = id.wrapping_add(1);
            out.extend_from_slice(&frame(s.request_bytes, id, queue));
        }
        if !out.is_empty() {
            stream
                .write_all_buf(&mut out)
                .await
                .map_err(io_error("writing requests"))?;
        }
    }
    Ok(())
}

/// Waiters by request id.
type Waiters = Arc<Mutex<HashMap<u32, oneshot::Sender<Bytes>>>>;

/// A reader task, a writer task (none with `direct`), a task per queue and a consumer task.
async fn client_tasks(stream: tokio::net::TcpStream, s: Settings) -> Result<()> {
    let (mut read, mut write) = stream.into_split();
    let waiters: Waiters = Arc::default();
    let (to_writer, mut writes) = mpsc::channel::<Bytes>(1024);
    let (to_consumer, mut consumed) = mpsc::channel::<Bytes>(1024);

    // Direct: the queue tasks write under this lock; there is no writer task.
    let (direct, writer) = if s.client == Client::Direct {
        (Some(Arc::new(tokio::sync::Mutex::new(write))), None)
    } else {
        let writer = tokio::spawn(async move {
            while let Some(first) = writes.recv().await {
                let mut out = BytesMut::from(first.as_ref());
                while let Ok(more) = writes.try_recv() {
                    out.extend_from_slice(&more);
                }
                if write.write_all_buf(&mut out).await.is_err() {
                    return;
                }
            }
        });
        (None, Some(writer))
    };
    let reader_waiters = waiters.clone();
    let reader = tokio::spawn(async move {
        let mut buf = BytesMut::with_capacity(64 * 1024);
        loop {
            match read.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            while let Some((id, _, body)) = next_frame(&mut buf) {
                let waiter = reader_waiters.lock().map_or(None, |mut w| w.remove(&id));
                if let Some(w) = waiter {
                    let _ = w.send(body);
                }
            }
        }
    });
    let next_id = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut queues = Vec::new();
    for queue in 0..s.queues {
        let waiters = waiters.clone();
        let to_writer = to_writer.clone();
        let to_consumer = to_consumer.clone();
        let next_id = next_id.clone();
        let direct = direct.clone();
        queues.push(tokio::spawn(async move {
            loop {
                let id = next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let (tx, rx) = oneshot::channel();
                if let Ok(mut w) = waiters.lock() {
                    w.insert(id, tx);
                }
                let request = frame(s.request_bytes, id, queue);
                if let Some(write) = &direct {
                    if write.lock().await.write_all(&request).await.is_err() {
                        return;
                    }
                } else if to_writer.send(request).await.is_err() {
                    return;
                }
                let Ok(Ok(body)) = tokio::time::timeout(CALL_TIMEOUT, rx).await else {
                    return;
                };
                if to_consumer.send(body).await.is_err() {
                    return;
                }
            }
        }));
    }
    drop(to_consumer);
    let mut answered = 0u64;
    while answered < s.count {
        let Some(body) = consumed.recv().await else {
            return Err(BenchError::Other(format!(
                "the client stopped after {answered} of {} answers",
                s.count
            )));
        };
        std::hint::black_box(body);
        answered += 1;
    }
    for q in queues {
        q.abort();
    }
    reader.abort();
    if let Some(writer) = writer {
        writer.abort();
    }
    Ok(())
}

/// A task per outstanding request awaiting its answer, one connection task reading the answers
/// and writing the requests it is handed.
async fn client_callers(stream: tokio::net::TcpStream, s: Settings) -> Result<()> {
    let waiters: Waiters = Arc::default();
    let (to_conn, mut requests) = mpsc::channel::<Bytes>(1024);
    let conn_waiters = waiters.clone();
    let conn = tokio::spawn(async move {
        let mut stream = stream;
        let mut buf = BytesMut::with_capacity(64 * 1024);
        let mut out = BytesMut::new();
        loop {
            tokio::select! {
                request = requests.recv() => {
                    let Some(first) = request else { return };
                    out.extend_from_slice(&first);
                    while let Ok(more) = requests.try_recv() {
                        out.extend_from_slice(&more);
                    }
                    if stream.write_all_buf(&mut out).await.is_err() {
                        return;
                    }
                }
                read = stream.read_buf(&mut buf) => {
                    if matches!(read, Ok(0) | Err(_)) {
                        return;
                    }
                    let mut w = match conn_waiters.lock() {
                        Ok(w) => w,
                        Err(_) => return,
                    };
                    while let Some((id, _, body)) = next_frame(&mut buf) {
                        if let Some(waiter) = w.remove(&id) {
                            let _ = waiter.send(body);
                        }
                    }
                }
            }
        }
    });
    let answered = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let next_id = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let (done_tx, done) = oneshot::channel::<()>();
    let done_tx = Arc::new(Mutex::new(Some(done_tx)));
    let mut callers = Vec::new();
    for queue in 0..s.queues {
        let (waiters, to_conn, next_id) = (waiters.clone(), to_conn.clone(), next_id.clone());
        let (answered, done_tx) = (answered.clone(), done_tx.clone());
        callers.push(tokio::spawn(async move {
            loop {
                let id = next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let (tx, rx) = oneshot::channel();
                if let Ok(mut w) = waiters.lock() {
                    w.insert(id, tx);
                }
                if to_conn
                    .send(frame(s.request_bytes, id, queue))
                    .await
                    .is_err()
                {
                    return;
                }
                let Ok(Ok(body)) = tokio::time::timeout(CALL_TIMEOUT, rx).await else {
                    return;
                };
                std::hint::black_box(body);
                let n = answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                if n == s.count {
                    if let Some(tx) = done_tx.lock().ok().and_then(|mut d| d.take()) {
                        let _ = tx.send(());
                    }
                }
            }
        }));
    }
    drop((to_conn, done_tx));
    let finished = done.await.is_ok();
    for c in callers {
        c.abort();
    }
    conn.abort();
    if finished {
        Ok(())
    } else {
        Err(BenchError::Other(format!(
            "the client stopped after {} of {} answers",
            answered.load(std::sync::atomic::Ordering::Relaxed),
            s.count
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_finishes_on_both_runtimes() {
        for client in ["single", "tasks", "direct", "callers"] {
            for runtime in ["multi-thread", "current-thread"] {
                let args = format!(
                    "--client {client} --runtime {runtime} --count 300 --rate 0 --queues 4"
                );
                let flags = Flags::parse(args.split_whitespace()).unwrap();
                rtt_floor(&flags).unwrap();
            }
        }
        let bad = Flags::parse("--client none --count 1".split_whitespace()).unwrap();
        assert!(rtt_floor(&bad).is_err());
    }

    #[test]
    fn frames_round_trip() {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&frame(40, 7, 3));
        buf.extend_from_slice(&frame(1, 8, 4));
        let (id, queue, body) = next_frame(&mut buf).unwrap();
        assert_eq!((id, queue, body.len()), (7, 3, 28));
        let (id, queue, body) = next_frame(&mut buf).unwrap();
        assert_eq!((id, queue, body.len()), (8, 4, 0));
        assert!(next_frame(&mut buf).is_none());
        buf.extend_from_slice(&frame(40, 9, 0).slice(..20));
        assert!(next_frame(&mut buf).is_none());
    }
}
