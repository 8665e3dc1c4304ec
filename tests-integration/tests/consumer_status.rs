//! GET_CONSUMER_RUNNING_INFO carries the push consumer's figures: `mqadmin
//! consumerStatus` (through `scripts/rocketmq-local.sh admin`) shows the
//! `rmq.*` properties (consumed, sent back, lag) and the RT&TPS line of the
//! topic (Java `ConsumeStatus`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmq_producer::Message;
use rmq_tests_integration::consumer::{self, ConsumerSpec};
use rmq_tests_integration::{Env, Recorder, TEST_TIMEOUT, poll_until, within};

const QUEUES: i32 = 2;
const MESSAGES: usize = 40;
/// Messages whose body is a multiple of this fail their first delivery.
const FAIL_EVERY: usize = 10;

/// `mqadmin consumerStatus -g group -i client_id`, its output.
async fn consumer_status(namesrv: &str, group: &str, client_id: &str) -> Result<String, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/rocketmq-local.sh");
    let run = tokio::process::Command::new("bash")
        .arg(script)
        .args([
            "admin",
            "consumerStatus",
            "-n",
            namesrv,
            "-g",
            group,
            "-i",
            client_id,
        ])
        .env("NAMESRV_ADDR", namesrv)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .map_err(|_| "mqadmin consumerStatus took over 60 s".to_owned())?
        .map_err(|e| format!("cannot run mqadmin: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "mqadmin consumerStatus: {}: {text} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(text)
}

/// The value of property `name` in consumerStatus output (`name : value`).
fn property<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == name).then(|| v.trim())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_status_shows_the_figures() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("it_cstatus", QUEUES).await;
        let group = rmq_testkit::unique_name("it_cstatus_cg");
        let producer = env.producer().await;
        env.send_spread(&producer, MESSAGES, |i| Message::new(&topic, i.to_string()))
            .await;
        producer.shutdown().await.expect("producer shutdown");
        let rec = Arc::new(Recorder::new());
        let c = consumer::start(
            ConsumerSpec::new(env.namesrv(), &group, &topic),
            consumer::recording(rec.clone(), 0, |m, _| {
                m.reconsume_times == 0
                    && std::str::from_utf8(&m.body)
                        .ok()
                        .and_then(|b| b.parse::<usize>().ok())
                        .is_some_and(|n| n % FAIL_EVERY == 0)
            }),
        )
        .await;
        let fails = MESSAGES / FAIL_EVERY;
        // Every message consumed, the failed ones again after their retry.
        rec.wait_for(
            Duration::from_secs(90),
            "every message and its retry",
            |seen| seen.deliveries.len() >= MESSAGES + fails,
        )
        .await;
        let ids = env.consumer_ids(&group).await;
        let [client_id] = ids.as_slice() else {
            panic!("one consumer of {group}: {ids:?}");
        };
        let text = poll_until(
            Duration::from_secs(60),
            Duration::from_millis(500),
            "consumerStatus with every figure",
            || {
                let (ns, group, id) = (env.namesrv().to_owned(), group.clone(), client_id.clone());
                async move {
                    let text = consumer_status(&ns, &group, &id).await?;
                    let want = MESSAGES.to_string();
                    let ok = property(&text, "rmq.consumedOkMessages") == Some(want.as_str())
                        && property(&text, "rmq.lag") == Some("0");
                    if ok { Ok(text) } else { Err(text) }
                }
            },
        )
        .await;
        println!("{text}");
        assert_eq!(
            property(&text, "rmq.consumedFailedMessages"),
            Some(fails.to_string().as_str())
        );
        assert_eq!(
            property(&text, "rmq.sentBackMessages"),
            Some(fails.to_string().as_str())
        );
        assert_eq!(property(&text, "rmq.sendBackFailures"), Some("0"));
        assert!(property(&text, "rmq.rebalances").is_some_and(|n| n != "0"));
        let received: usize = property(&text, "rmq.receivedMessages")
            .and_then(|n| n.parse().ok())
            .expect("rmq.receivedMessages");
        assert_eq!(received, MESSAGES + fails, "the topic's and the retries'");
        // The RT&TPS table: one line per topic (the topic and the retry topic).
        let tps_line = text
            .lines()
            .find(|l| {
                l.trim_start().starts_with(topic.as_str()) && l.split_whitespace().count() == 7
            })
            .unwrap_or_else(|| panic!("an RT&TPS line of {topic}"));
        let ok_tps: f64 = tps_line
            .split_whitespace()
            .nth(4)
            .and_then(|v| v.parse().ok())
            .expect("ConsumeOKTPS");
        assert!(ok_tps > 0.0, "ConsumeOKTPS of {topic}: {tps_line}");
        c.shutdown().await.expect("clean shutdown");
        env.shutdown().await;
    })
    .await;
}
