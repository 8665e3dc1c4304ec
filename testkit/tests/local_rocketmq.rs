//! The testkit against the real RocketMQ: the broker is registered, and (when local) a killed broker
//! disappears from the name server and comes back on `start_broker`.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use rmq_testkit::{BROKER_A, broker, kill_broker, registered_brokers, start_broker};

fn is_registered(namesrv: &str, name: &str, addr: &str) -> bool {
    registered_brokers(namesrv)
        .unwrap_or_else(|e| panic!("name server {namesrv}: {e}"))
        .iter()
        .any(|b| b.name == name && b.id == 0 && b.addr == addr)
}

#[tokio::test]
async fn broker_is_registered_and_survives_kill_and_restart() {
    let b = broker().await;
    assert!(
        is_registered(&b.namesrv_addr, &b.broker_name, &b.broker_addr),
        "{b:?} not in {:?}",
        registered_brokers(&b.namesrv_addr)
    );
    assert!(
        b.version.starts_with("4.") || b.version.starts_with("5."),
        "version {:?}",
        b.version
    );
    TcpStream::connect(&b.broker_addr).expect("broker port answers");

    if !b.local {
        eprintln!("external NAMESRV_ADDR: kill/restart not exercised");
        return;
    }
    kill_broker(BROKER_A).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while is_registered(&b.namesrv_addr, BROKER_A, &b.broker_addr) {
        assert!(
            Instant::now() < deadline,
            "killed broker still registered after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        TcpStream::connect(&b.broker_addr).is_err(),
        "killed broker still accepts connections"
    );

    let addr = start_broker(BROKER_A).await;
    assert_eq!(addr, b.broker_addr);
    assert!(is_registered(&b.namesrv_addr, BROKER_A, &addr));
}
