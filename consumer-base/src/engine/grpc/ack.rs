//! Acks: `AckMessage`, one request per topic, read per entry
//! ([`ack_round`]); and the same tried again in rounds for acks that
//! failed for a reason worth retrying ([`ack_all`]).

use std::collections::{BTreeMap, HashMap};

use rmq_grpc::proto;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::calls::ProxyCalls;
use super::handle::Handle;
use super::rounds::{ROUNDS, pause};

/// An ack that learns how it ended ([`ack_all`], the
/// [`Acker`](super::Acker)).
pub trait Settled {
    /// The ack is done with: `acked` when the proxy took it; otherwise the
    /// message comes back (after its invisible time, or once the session
    /// ends).
    fn settled(self, acked: bool);
}

/// Acks that failed, and why.
#[derive(Debug)]
pub struct AckFailure<A> {
    /// The call's error, or the entry's status as an
    /// [`rmq_grpc::Error::Proxy`] of `AckMessage`.
    pub error: rmq_grpc::Error,
    /// The acks it concerns.
    pub acks: Vec<A>,
}

/// How one round of acks went.
#[derive(Debug)]
pub struct AckRound<A> {
    /// Taken by the proxy (an entry its answer does not name included).
    pub acked: Vec<A>,
    /// Not taken.
    pub failed: Vec<AckFailure<A>>,
}

/// `AckMessage` of `acks` for `group`: one request per topic, each entry's
/// status read.
pub async fn ack_round<S: ProxyCalls, A: Handle>(
    session: &S,
    group: &str,
    acks: Vec<A>,
) -> AckRound<A> {
    let mut by_topic: BTreeMap<String, Vec<A>> = BTreeMap::new();
    for a in acks {
        match by_topic.get_mut(a.topic()) {
            Some(list) => list.push(a),
            None => {
                by_topic.insert(a.topic().to_owned(), vec![a]);
            }
        }
    }
    let mut round = AckRound {
        acked: Vec::new(),
        failed: Vec::new(),
    };
    for (topic, list) in by_topic {
        let entries = list
            .iter()
            .map(|a| (a.message_id().to_owned(), a.receipt_handle().to_owned()))
            .collect();
        match session.ack_message(&topic, group, entries).await {
            Ok(results) => {
                let refused: HashMap<&str, &proto::Status> = results
                    .iter()
                    .filter_map(|r| {
                        let s = r.status.as_ref()?;
                        (s.code != proto::Code::Ok as i32).then_some((r.message_id.as_str(), s))
                    })
                    .collect();
                for a in list {
                    match refused.get(a.message_id()) {
                        None => round.acked.push(a),
                        Some(s) => round.failed.push(AckFailure {
                            error: rmq_grpc::Error::Proxy {
                                rpc: "AckMessage",
                                code: s.code,
                                message: format!("message {}: {}", a.message_id(), s.message),
                            },
                            acks: vec![a],
                        }),
                    }
                }
            }
            Err(error) => round.failed.push(AckFailure { error, acks: list }),
        }
    }
    round
}

/// Acks `acks` for `group`; those that failed for a reason worth retrying
/// go again after a pause, for [`ROUNDS`] rounds (one once `stop` is
/// cancelled). Every ack is [`settled`](Settled::settled).
pub async fn ack_all<S, A>(session: &S, group: &str, mut acks: Vec<A>, stop: &CancellationToken)
where
    S: ProxyCalls,
    A: Handle + Settled,
{
    for round in 1..=ROUNDS {
        let done = ack_round(session, group, acks).await;
        for a in done.acked {
            a.settled(true);
        }
        let mut again = Vec::new();
        for f in done.failed {
            if f.error.is_retryable() {
                again.extend(f.acks);
            } else {
                warn!(count = f.acks.len(), error = %rmq_protocol::ErrorChain(&f.error), "ack refused; the messages come back");
                for a in f.acks {
                    a.settled(false);
                }
            }
        }
        if again.is_empty() {
            return;
        }
        if round == ROUNDS || stop.is_cancelled() {
            warn!(
                count = again.len(),
                "acks failed for good; the messages come back"
            );
            for a in again {
                a.settled(false);
            }
            return;
        }
        debug!(count = again.len(), round, "acks failed; trying again");
        pause(stop).await;
        acks = again;
    }
}

#[cfg(test)]
mod tests {
    use tokio::time::Instant;

    use super::super::rounds::ROUND_PAUSE;
    use super::super::script::{Call, Script, TestAck, acked, entry_status, refused, timed_out};
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn one_request_per_topic_read_per_entry() {
        let script = Script::new();
        script.ack_answers([
            // Topic A: m1 taken, m2 refused, m3 busy, m4 not named.
            Ok(vec![
                entry_status("m1", proto::Code::Ok),
                entry_status("m2", proto::Code::InvalidReceiptHandle),
                entry_status("m3", proto::Code::ProxyTimeout),
            ]),
            // Topic B: the whole request failed.
            Err(timed_out()),
        ]);
        let acks = [
            ("A", "m1"),
            ("B", "m5"),
            ("A", "m2"),
            ("A", "m3"),
            ("A", "m4"),
        ]
        .map(|(t, m)| TestAck::new(t, m));
        let round = ack_round(&script, "G", acks.to_vec()).await;
        let ids = |v: &[TestAck]| v.iter().map(|a| a.msg_id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&round.acked), ["m1", "m4"]);
        let failed: Vec<(Vec<String>, bool)> = round
            .failed
            .iter()
            .map(|f| (ids(&f.acks), f.error.is_retryable()))
            .collect();
        assert_eq!(
            failed,
            [
                (vec!["m2".to_owned()], false),
                (vec!["m3".to_owned()], true),
                (vec!["m5".to_owned()], true),
            ]
        );
        let refusal = rmq_protocol::ErrorChain(&round.failed[0].error).to_string();
        assert!(refusal.contains("message m2"), "{refusal}");
        let calls = script.calls();
        let topics: Vec<(String, Vec<(String, String)>)> = calls
            .into_iter()
            .filter_map(|c| match c {
                Call::Ack(topic, group, entries) => {
                    assert_eq!(group, "G");
                    Some((topic, entries))
                }
                _ => None,
            })
            .collect();
        let e = |m: &str| (m.to_owned(), format!("h-{m}"));
        assert_eq!(
            topics,
            [
                ("A".to_owned(), vec![e("m1"), e("m2"), e("m3"), e("m4")]),
                ("B".to_owned(), vec![e("m5")]),
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retryable_failures_go_again_after_a_pause() {
        let script = Script::new();
        script.ack_answers([
            Ok(vec![
                entry_status("m2", proto::Code::InvalidReceiptHandle),
                entry_status("m3", proto::Code::ProxyTimeout),
            ]),
            Err(timed_out()),
            Ok(vec![]),
        ]);
        let acks = ["m1", "m2", "m3"].map(|m| TestAck::new("T", m));
        let started = Instant::now();
        ack_all(&script, "G", acks.to_vec(), &CancellationToken::new()).await;
        assert_eq!(started.elapsed(), ROUND_PAUSE * 2);
        assert_eq!(
            acks.iter().map(TestAck::outcome).collect::<Vec<_>>(),
            [Some(true), Some(false), Some(true)]
        );
        let sent: Vec<usize> = script
            .calls()
            .iter()
            .filter_map(|c| match c {
                Call::Ack(_, _, e) => Some(e.len()),
                _ => None,
            })
            .collect();
        assert_eq!(sent, [3, 1, 1], "only m3 goes again");
    }

    #[tokio::test(start_paused = true)]
    async fn acks_failing_every_round_come_back() {
        let script = Script::new();
        script.ack_answers((0..ROUNDS).map(|_| Err(timed_out())));
        let acks = [TestAck::new("T", "m")];
        ack_all(&script, "G", acks.to_vec(), &CancellationToken::new()).await;
        assert_eq!(acks[0].outcome(), Some(false));
        assert_eq!(script.calls().len(), ROUNDS as usize);
    }

    #[tokio::test(start_paused = true)]
    async fn once_stopped_one_round_only() {
        let script = Script::new();
        script.ack_answers([Err(timed_out()), Ok(vec![])]);
        let stop = CancellationToken::new();
        stop.cancel();
        let acks = [TestAck::new("T", "m")];
        ack_all(&script, "G", acks.to_vec(), &stop).await;
        assert_eq!(acks[0].outcome(), Some(false));
        assert_eq!(script.calls().len(), 1);
        // A refusal is not tried again, stopped or not.
        let script = Script::new();
        script.ack_answers([Err(refused())]);
        let acks = [TestAck::new("T", "m")];
        ack_all(&script, "G", acks.to_vec(), &CancellationToken::new()).await;
        assert_eq!(acks[0].outcome(), Some(false));
        let script = Script::new();
        script.ack_answers([acked(&["m"])]);
        let acks = [TestAck::new("T", "m")];
        ack_all(&script, "G", acks.to_vec(), &CancellationToken::new()).await;
        assert_eq!(acks[0].outcome(), Some(true));
    }
}
