//! Admin helpers for tests: create a topic with N queues on the real broker
//! (UPDATE_AND_CREATE_TOPIC) and wait until the name server routes it.

use std::time::{Duration, Instant};

use rmq_protocol::header::{CreateTopicRequestHeader, GetRouteInfoRequestHeader};
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::RemotingClient;

/// Errors of the admin helpers (tests only: boxed is enough).
pub type AdminError = Box<dyn std::error::Error + Send + Sync>;

const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Creates (or updates) `topic` with `queues` read and write queues on the
/// broker at `broker_addr`, then waits (up to 15 s) until the name server at
/// `namesrv_addr` returns a route for it.
///
/// # Errors
///
/// The broker refusing the topic, or the route not appearing in time.
pub async fn create_topic(
    client: &RemotingClient,
    namesrv_addr: &str,
    broker_addr: &str,
    topic: &str,
    queues: i32,
) -> Result<(), AdminError> {
    let header = CreateTopicRequestHeader::new(topic, queues);
    create_topic_with(client, namesrv_addr, broker_addr, &header).await
}

/// Like [`create_topic`], with the 5.x message type `message_type` (`NORMAL`, `FIFO`, `DELAY`,
/// `TRANSACTION`: the topic attribute `+message.type`).
///
/// # Errors
///
/// The broker refusing the topic, or the route not appearing in time.
pub async fn create_typed_topic(
    client: &RemotingClient,
    namesrv_addr: &str,
    broker_addr: &str,
    topic: &str,
    queues: i32,
    message_type: &str,
) -> Result<(), AdminError> {
    let mut header = CreateTopicRequestHeader::new(topic, queues);
    header.attributes = Some(format!("+message.type={message_type}"));
    create_topic_with(client, namesrv_addr, broker_addr, &header).await
}

/// Sets the permission of `topic` (with `queues` queues) on the broker at `broker_addr`
/// (UPDATE_AND_CREATE_TOPIC with `perm`: 2 write, 4 read, 6 both, as `mqadmin updateTopicPerm`).
/// The broker registers the change with its name servers at once; a route without the read bit
/// drops the broker's queues from consumers' assignments.
///
/// # Errors
///
/// The broker refusing the update.
pub async fn set_topic_perm(
    client: &RemotingClient,
    broker_addr: &str,
    topic: &str,
    queues: i32,
    perm: i32,
) -> Result<(), AdminError> {
    let mut header = CreateTopicRequestHeader::new(topic, queues);
    header.perm = perm;
    update_topic(client, broker_addr, &header).await
}

/// Sends UPDATE_AND_CREATE_TOPIC with `header` to `broker_addr`.
async fn update_topic(
    client: &RemotingClient,
    broker_addr: &str,
    header: &CreateTopicRequestHeader,
) -> Result<(), AdminError> {
    let request = RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC, header);
    client
        .invoke_expect(broker_addr, request, CALL_TIMEOUT, &[ResponseCode::SUCCESS])
        .await?;
    Ok(())
}

/// Sends UPDATE_AND_CREATE_TOPIC with `header` to `broker_addr`, then waits (up to 15 s in all)
/// for the topic's route, sending the update again when the route is not there after 3 s.
///
/// A 4.9.x name server can lose the registration of a topic created while other topics are
/// created: it skips a registration whose topic-table version it already recorded, and an
/// incremental registration carries the table's current version, which may already count a later
/// topic (`tests-integration/tests/auto_created_route.rs` shows it). The repeated update
/// registers the topic with a new version.
async fn create_topic_with(
    client: &RemotingClient,
    namesrv_addr: &str,
    broker_addr: &str,
    header: &CreateTopicRequestHeader,
) -> Result<(), AdminError> {
    const ATTEMPTS: u32 = 5;
    let mut attempt = 1;
    loop {
        update_topic(client, broker_addr, header).await?;
        let within = Duration::from_secs(3);
        match wait_for_route(client, namesrv_addr, &header.topic, within).await {
            Ok(_) => return Ok(()),
            Err(e) if attempt == ATTEMPTS => return Err(e),
            Err(_) => attempt += 1,
        }
    }
}

/// Creates (or updates) the subscription group `group` on the broker at `broker_addr` with
/// orderly consumption (`consumeMessageOrderly`: the 5.x proxy then delivers a message group's
/// next message only after the previous one is acked).
///
/// # Errors
///
/// The broker refusing the group.
pub async fn create_orderly_group(
    client: &RemotingClient,
    broker_addr: &str,
    group: &str,
) -> Result<(), AdminError> {
    // UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200), body: Java SubscriptionGroupConfig.
    let body = serde_json::json!({
        "groupName": group,
        "consumeEnable": true,
        "consumeFromMinEnable": true,
        "consumeBroadcastEnable": true,
        "consumeMessageOrderly": true,
        "retryQueueNums": 1,
        "retryMaxTimes": 16,
        "brokerId": 0,
        "whichBrokerWhenConsumeSlowly": 1,
        "notifyConsumerIdsChangedEnable": true,
    });
    let request = RemotingCommand::new_request(RequestCode(200)).with_body(body.to_string());
    client
        .invoke_expect(broker_addr, request, CALL_TIMEOUT, &[ResponseCode::SUCCESS])
        .await?;
    Ok(())
}

/// Queries the route of `topic` once; returns the raw response (code and body).
///
/// # Errors
///
/// A transport failure.
pub async fn query_route(
    client: &RemotingClient,
    namesrv_addr: &str,
    topic: &str,
) -> Result<RemotingCommand, AdminError> {
    let header = GetRouteInfoRequestHeader::new(topic);
    let request = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &header);
    Ok(client.invoke(namesrv_addr, request, CALL_TIMEOUT).await?)
}

/// Polls the name server until it returns a route for `topic`.
///
/// # Errors
///
/// No route within `within`, or a transport failure.
pub async fn wait_for_route(
    client: &RemotingClient,
    namesrv_addr: &str,
    topic: &str,
    within: Duration,
) -> Result<RemotingCommand, AdminError> {
    let deadline = Instant::now() + within;
    loop {
        let response = query_route(client, namesrv_addr, topic).await?;
        if response.response_code() == ResponseCode::SUCCESS {
            return Ok(response);
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the name server at {namesrv_addr} has no route for {topic} after {within:?}: {:?} {:?}",
                response.response_code(),
                response.remark
            )
            .into());
        }
        // Registration with the name server is asynchronous on the broker side;
        // there is no event to await, so poll.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
