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
    let request = RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC, &header);
    client
        .invoke_expect(broker_addr, request, CALL_TIMEOUT, &[ResponseCode::SUCCESS])
        .await?;
    wait_for_route(client, namesrv_addr, topic, Duration::from_secs(15)).await?;
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
