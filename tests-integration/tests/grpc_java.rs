//! rmq over gRPC beside the official Java gRPC client (`rocketmq-client-java`,
//! `bench/peers/java-grpc` `rmqgrpc.GrpcPeer`), through the same 5.x proxy: messages the Java
//! producer sends arrive at rmq's gRPC `SimpleConsumer`, and messages rmq's gRPC `Producer` sends
//! arrive at the Java `SimpleConsumer`, with id, tag, keys, body and user properties equal. The
//! proxy is `RMQ_PROXY_ENDPOINT`; 4.9.x has no proxy, so these are `#[ignore]`d and
//! `scripts/test.sh` runs them on 5.x.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use rmq_consumer_pull::SimpleConsumer;
use rmq_producer::{Message, Producer};
use rmq_testkit::client::within;
use rmq_testkit::grpc::{endpoint, receive_ids, typed_topic};
use rmq_testkit::unique_name;
use rmq_tests_integration::java_peer::{self, JavaProcess};

const COUNT: usize = 5;
const PEER_LIMIT: Duration = Duration::from_secs(60);

/// The fields both sides compare: tag, keys, body, user properties (`user-*`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fields {
    tag: String,
    keys: Vec<String>,
    body: String,
    props: BTreeMap<String, String>,
}

/// What the Java peer sends (and rmq sends to it) as message `i`.
fn fields(i: usize) -> Fields {
    Fields {
        tag: format!("tag{i}"),
        keys: vec![format!("key-{i}"), format!("other-{i}")],
        body: format!("java grpc body {i}"),
        props: BTreeMap::from([
            ("user-a".to_owned(), format!("value {i}")),
            ("user-b".to_owned(), "ünïcode ✓".to_owned()),
        ]),
    }
}

/// A hex field of the peer's `GOT` line (`-` = empty) as UTF-8.
fn unhex(field: &str) -> String {
    if field == "-" {
        return String::new();
    }
    let bytes: Vec<u8> = (0..field.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(field.get(i..i + 2).unwrap_or("zz"), 16).expect("hex"))
        .collect();
    String::from_utf8(bytes).expect("UTF-8")
}

/// The words of the peer's lines starting with `event`.
fn events(lines: &[String], event: &str) -> Vec<Vec<String>> {
    lines
        .iter()
        .map(|l| l.split(' ').map(str::to_owned).collect::<Vec<_>>())
        .filter(|w| w.first().is_some_and(|e| e == event))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn java_grpc_producer_to_rmq_grpc_consumer() {
    within(180, "Java gRPC -> rmq gRPC", async {
        let classpath = java_peer::grpc_classpath().await;
        let topic = typed_topic("GrpcJavaToRmq", "NORMAL").await;
        let home = tempfile::tempdir().expect("temp dir");
        let count = COUNT.to_string();
        let mut java = JavaProcess::spawn(
            &classpath,
            "rmqgrpc.GrpcPeer",
            &["produce", &endpoint(), &topic, &count],
            home.path(),
        );
        java.wait_for(PEER_LIMIT, "the Java gRPC producer's sends", |l| {
            l.iter().any(|l| l == "DONE")
        })
        .await;
        let sent: HashMap<String, usize> = events(&java.lines(), "SENT")
            .into_iter()
            .map(|w| (w[1].clone(), w[2].parse().expect("index")))
            .collect();
        java.finish(Duration::from_secs(10)).await;
        assert_eq!(sent.len(), COUNT);

        let consumer = SimpleConsumer::builder()
            .group(unique_name("grpc_java_cg"))
            .endpoint(endpoint())
            .subscribe(&topic, "*")
            .await_duration(Duration::from_secs(5))
            .start()
            .await
            .expect("gRPC simple consumer starts");
        let ids: Vec<String> = sent.keys().cloned().collect();
        let got = receive_ids(&consumer, &ids, 60).await;
        for (id, i) in &sent {
            let m = &got[id];
            let want = fields(*i);
            assert_eq!(m.msg_id, *id);
            assert_eq!(m.message().message.topic, topic);
            assert_eq!(m.message().message.tags(), Some(want.tag.as_str()));
            assert_eq!(m.message().message.keys().collect::<Vec<_>>(), want.keys);
            assert_eq!(m.message().message.body.as_ref(), want.body.as_bytes());
            assert_eq!(
                rmq_testkit::grpc::user_properties(&m.message().message.properties),
                want.props
            );
            assert_eq!(m.reconsume_times(), 0);
        }
        consumer.shutdown().await.expect("consumer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn rmq_grpc_producer_to_java_grpc_consumer() {
    within(180, "rmq gRPC -> Java gRPC", async {
        let classpath = java_peer::grpc_classpath().await;
        let topic = typed_topic("GrpcRmqToJava", "NORMAL").await;
        let producer = Producer::builder()
            .group(unique_name("grpc_java_pg"))
            .endpoint(endpoint())
            .start()
            .await
            .expect("gRPC producer starts");
        let mut sent = HashMap::new();
        for i in 0..COUNT {
            let f = fields(i);
            let mut m = Message::new(&topic, f.body.clone())
                .with_tags(f.tag.clone())
                .with_keys(f.keys.clone());
            for (k, v) in &f.props {
                m = m.with_property(k, v);
            }
            let id = producer.send(m).await.expect("gRPC send").msg_id;
            sent.insert(id, f);
        }
        producer.shutdown().await.expect("producer shutdown");

        let home = tempfile::tempdir().expect("temp dir");
        let group = unique_name("grpc_java_cg");
        let count = COUNT.to_string();
        let mut java = JavaProcess::spawn(
            &classpath,
            "rmqgrpc.GrpcPeer",
            &["consume", &endpoint(), &topic, &group, &count],
            home.path(),
        );
        java.wait_for(PEER_LIMIT, "the Java gRPC consumer's receives", |l| {
            l.iter().any(|l| l == "DONE")
        })
        .await;
        let got: HashMap<String, (Fields, String)> = events(&java.lines(), "GOT")
            .into_iter()
            .map(|w| {
                let props = unhex(&w[5])
                    .split('\u{1}')
                    .filter(|kv| !kv.is_empty())
                    .filter_map(|kv| kv.split_once('='))
                    .filter(|(k, _)| k.starts_with("user-"))
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect();
                let f = Fields {
                    tag: unhex(&w[2]),
                    keys: unhex(&w[3]).split('\u{1}').map(str::to_owned).collect(),
                    body: unhex(&w[4]),
                    props,
                };
                (w[1].clone(), (f, w[6].clone()))
            })
            .collect();
        java.finish(Duration::from_secs(10)).await;
        for (id, want) in &sent {
            let Some((f, attempt)) = got.get(id) else {
                panic!("the Java consumer did not get {id}: {:?}", got.keys());
            };
            assert_eq!(f, want, "{id}");
            assert_eq!(attempt, "1", "{id}: first delivery");
        }
    })
    .await;
}
