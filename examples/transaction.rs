//! Transactional messages tied to a local database: an order row is written
//! to SQLite in the local transaction (`execute`), and looked up when the
//! broker checks back (`check`). The message reaches consumers only if the
//! row was committed.
//!
//! ```sh
//! cargo run --example transaction
//! ```
//!
//! Three orders: one commits, one is refused by the local transaction (rolled
//! back, never delivered), and one is written but answered `Unknown`, as if
//! the process died before telling the broker: the broker checks back, the
//! row is found, the message is committed. Uses the RocketMQ at
//! `NAMESRV_ADDR`, or starts a local one like the quickstart does (its
//! broker checks back after about 3 s; a broker with default settings after
//! 6 s plus up to one check interval, 30 s on 5.x and 60 s on 4.9.x).

#[path = "support/local_rocketmq.rs"]
mod local_rocketmq;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use local_rocketmq::{Outcome, run_example};
use rmq::prelude::*;
use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::Notify;

/// What the application passes to `send_in_transaction`.
#[derive(Debug, Clone)]
struct Order {
    id: String,
    item: String,
    amount: i64,
    /// Write the row but answer `Unknown` (a crash before END_TRANSACTION).
    lose_the_answer: bool,
}

/// The local transaction: SQLite behind a mutex, used from the blocking pool
/// (rusqlite is synchronous; the runtime's threads never block on it).
#[derive(Clone)]
struct Orders {
    db: Arc<Mutex<Connection>>,
}

impl Orders {
    fn open(path: &PathBuf) -> rusqlite::Result<Orders> {
        let db = Connection::open(path)?;
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS orders (
                 id TEXT PRIMARY KEY, item TEXT NOT NULL, amount INTEGER NOT NULL CHECK (amount > 0)
             )",
        )?;
        Ok(Orders {
            db: Arc::new(Mutex::new(db)),
        })
    }

    /// Runs `f` on the connection in the blocking pool.
    async fn with_db<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Option<rusqlite::Result<T>> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || {
            let mut db = db.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut db)
        })
        .await
        .ok()
    }
}

#[async_trait]
impl TransactionListener<Order> for Orders {
    async fn execute(&self, _msg: &Message, order: Order) -> TransactionState {
        let (id, lose) = (order.id.clone(), order.lose_the_answer);
        let written = self
            .with_db(move |db| {
                let tx = db.transaction()?;
                tx.execute(
                    "INSERT INTO orders (id, item, amount) VALUES (?1, ?2, ?3)",
                    params![order.id, order.item, order.amount],
                )?;
                tx.commit()
            })
            .await;
        match written {
            Some(Ok(())) if lose => {
                println!("{id}: execute wrote the order row, then the answer is lost -> unknown");
                TransactionState::Unknown
            }
            Some(Ok(())) => {
                println!("{id}: execute wrote the order row -> commit");
                TransactionState::Commit
            }
            Some(Err(e)) => {
                println!("{id}: execute could not write the order ({e}) -> rollback");
                TransactionState::Rollback
            }
            // The blocking task died: whether the row exists is for `check` to find out.
            None => TransactionState::Unknown,
        }
    }

    async fn check(&self, msg: &MessageExt) -> TransactionState {
        let Some(id) = msg.keys().next().map(str::to_owned) else {
            return TransactionState::Rollback;
        };
        let key = id.clone();
        let found = self
            .with_db(move |db| {
                db.query_row("SELECT amount FROM orders WHERE id = ?1", [key], |r| {
                    r.get::<_, i64>(0)
                })
                .optional()
            })
            .await;
        match found {
            Some(Ok(Some(_))) => {
                println!("{id}: the broker checked back, the order row is there -> commit");
                TransactionState::Commit
            }
            Some(Ok(None)) => {
                println!("{id}: the broker checked back, no order row -> rollback");
                TransactionState::Rollback
            }
            // Cannot tell now: the broker asks again later.
            _ => TransactionState::Unknown,
        }
    }
}

#[tokio::main]
async fn main() -> Outcome {
    run_example(|namesrv| async move { run(&namesrv).await }).await
}

async fn run(namesrv: &str) -> Outcome {
    let started = Instant::now();
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let topic = format!("transaction_orders_{stamp}");
    let db_path = std::env::temp_dir().join(format!("rmq-transaction-example-{stamp}.sqlite"));
    let orders = Orders::open(&db_path)?;

    // The first send creates the topic (the broker auto-creates it); the
    // transactional producer below looks its route up at start.
    let plain = Producer::builder()
        .group("transaction_example_setup")
        .namesrv_addr(namesrv)
        .start()
        .await?;
    plain
        .send(Message::new(&topic, "hello").with_tags("warmup"))
        .await?;
    let _ = plain.shutdown().await;

    let consumed = Arc::new(Mutex::new(BTreeSet::<String>::new()));
    let arrived = Arc::new(Notify::new());
    let listener = {
        let (consumed, arrived) = (consumed.clone(), arrived.clone());
        listener_fn(move |msgs, _ctx| {
            let (consumed, arrived) = (consumed.clone(), arrived.clone());
            Box::pin(async move {
                for m in msgs.iter().filter(|m| m.tags() == Some("order")) {
                    let id = m.keys().next().unwrap_or("?").to_owned();
                    println!("consumer: got {id} ({})", String::from_utf8_lossy(&m.body));
                    consumed
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(id);
                }
                arrived.notify_one();
                ConsumeResult::Success
            })
        })
    };
    let consumer = PushConsumer::builder()
        .group(format!("transaction_example_consumer_{stamp}"))
        .namesrv_addr(namesrv)
        .consume_from(ConsumeFrom::FirstOffset)
        .subscribe(&topic, "order")
        .start(listener)
        .await?;

    let producer = Producer::builder()
        .group("transaction_example_producer")
        .namesrv_addr(namesrv)
        .transaction_listener(orders.clone())
        // Heartbeat to the topic's broker at once: after a restart this
        // process takes over the check-backs of what the last one left open.
        .topics([topic.as_str()])
        .start()
        .await?;

    let plan = [
        ("order-1", "book", 12, false),
        ("order-2", "pen", 0, false), // violates `amount > 0`: the local transaction fails
        ("order-3", "lamp", 30, true),
    ];
    for (id, item, amount, lose_the_answer) in plan {
        let msg = Message::new(&topic, format!("{item} x {amount}"))
            .with_tags("order")
            .with_keys([id]);
        let order = Order {
            id: id.to_owned(),
            item: item.to_owned(),
            amount,
            lose_the_answer,
        };
        let (sent, state) = producer.send_in_transaction(msg, order).await?;
        println!("{id}: half message {} -> {state}", sent.msg_id);
    }

    println!("waiting for order-1 and, after the broker's check-back, order-3 ...");
    let want: BTreeSet<String> = ["order-1", "order-3"].map(String::from).into();
    let wait = async {
        loop {
            let notified = arrived.notified();
            if *consumed.lock().unwrap_or_else(|e| e.into_inner()) == want {
                break;
            }
            notified.await;
        }
    };
    let waited = tokio::time::timeout(Duration::from_secs(150), wait).await;
    consumer.shutdown().await?;
    let _ = producer.shutdown().await;

    let got = consumed.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let rows: Vec<String> = orders
        .with_db(|db| {
            let mut q = db.prepare("SELECT id FROM orders ORDER BY id")?;
            q.query_map([], |r| r.get(0))?.collect()
        })
        .await
        .ok_or("the database task failed")??;
    let _ = std::fs::remove_file(&db_path);
    println!(
        "order rows {rows:?}; delivered {got:?}; order-2 rolled back and never delivered; elapsed {:.1?}",
        started.elapsed()
    );
    if waited.is_err() || got != want {
        return Err("order-1 and order-3 were not both delivered within 150 s".into());
    }
    Ok(())
}
