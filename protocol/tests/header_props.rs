//! Every typed header round-trips through ext fields and through a
//! `RemotingCommand` (without the codec).

use proptest::option;
use proptest::prelude::*;
use rmq_protocol::header::*;
use rmq_protocol::{RemotingCommand, RequestCode};

fn s() -> impl Strategy<Value = String> {
    any::<String>()
}

fn os() -> impl Strategy<Value = Option<String>> {
    option::of(any::<String>())
}

fn oi32() -> impl Strategy<Value = Option<i32>> {
    option::of(any::<i32>())
}

fn oi64() -> impl Strategy<Value = Option<i64>> {
    option::of(any::<i64>())
}

fn ob() -> impl Strategy<Value = Option<bool>> {
    option::of(any::<bool>())
}

fn send_v1() -> impl Strategy<Value = SendMessageRequestHeader> {
    (
        (
            s(),
            s(),
            s(),
            any::<i32>(),
            any::<i32>(),
            any::<i32>(),
            any::<i64>(),
        ),
        (any::<i32>(), os(), oi32(), ob(), oi32(), ob(), os()),
    )
        .prop_map(
            |(
                (
                    producer_group,
                    topic,
                    default_topic,
                    default_topic_queue_nums,
                    queue_id,
                    sys_flag,
                    born_timestamp,
                ),
                (
                    flag,
                    properties,
                    reconsume_times,
                    unit_mode,
                    max_reconsume_times,
                    batch,
                    broker_name,
                ),
            )| SendMessageRequestHeader {
                producer_group,
                topic,
                default_topic,
                default_topic_queue_nums,
                queue_id,
                sys_flag,
                born_timestamp,
                flag,
                properties,
                reconsume_times,
                unit_mode,
                max_reconsume_times,
                batch,
                broker_name,
            },
        )
}

fn send_v2() -> impl Strategy<Value = SendMessageRequestHeaderV2> {
    send_v1().prop_map(SendMessageRequestHeaderV2::from)
}

fn send_response() -> impl Strategy<Value = SendMessageResponseHeader> {
    (
        s(),
        any::<i32>(),
        any::<i64>(),
        os(),
        os(),
        os(),
        os(),
        ob(),
    )
        .prop_map(
            |(
                msg_id,
                queue_id,
                queue_offset,
                transaction_id,
                batch_uniq_id,
                recall_handle,
                msg_region,
                trace_on,
            )| {
                SendMessageResponseHeader {
                    msg_id,
                    queue_id,
                    queue_offset,
                    transaction_id,
                    batch_uniq_id,
                    recall_handle,
                    msg_region,
                    trace_on,
                }
            },
        )
}

fn end_transaction() -> impl Strategy<Value = EndTransactionRequestHeader> {
    (
        s(),
        any::<i64>(),
        any::<i64>(),
        any::<i32>(),
        ob(),
        s(),
        os(),
        os(),
        os(),
    )
        .prop_map(
            |(
                producer_group,
                tran_state_table_offset,
                commit_log_offset,
                commit_or_rollback,
                from_transaction_check,
                msg_id,
                transaction_id,
                topic,
                broker_name,
            )| EndTransactionRequestHeader {
                producer_group,
                tran_state_table_offset,
                commit_log_offset,
                commit_or_rollback,
                from_transaction_check,
                msg_id,
                transaction_id,
                topic,
                broker_name,
            },
        )
}

fn pull_request() -> impl Strategy<Value = PullMessageRequestHeader> {
    (
        (
            s(),
            s(),
            any::<i32>(),
            any::<i64>(),
            any::<i32>(),
            any::<i32>(),
            any::<i64>(),
        ),
        (any::<i64>(), os(), any::<i64>(), os(), oi32(), os()),
    )
        .prop_map(
            |(
                (
                    consumer_group,
                    topic,
                    queue_id,
                    queue_offset,
                    max_msg_nums,
                    sys_flag,
                    commit_offset,
                ),
                (
                    suspend_timeout_millis,
                    subscription,
                    sub_version,
                    expression_type,
                    max_msg_bytes,
                    broker_name,
                ),
            )| PullMessageRequestHeader {
                consumer_group,
                topic,
                queue_id,
                queue_offset,
                max_msg_nums,
                sys_flag,
                commit_offset,
                suspend_timeout_millis,
                subscription,
                sub_version,
                expression_type,
                max_msg_bytes,
                broker_name,
            },
        )
}

fn pull_response() -> impl Strategy<Value = PullMessageResponseHeader> {
    (
        any::<i64>(),
        any::<i64>(),
        any::<i64>(),
        any::<i64>(),
        oi64(),
        oi32(),
        oi32(),
        oi32(),
    )
        .prop_map(
            |(
                suggest_which_broker_id,
                next_begin_offset,
                min_offset,
                max_offset,
                offset_delta,
                topic_sys_flag,
                group_sys_flag,
                forbidden_type,
            )| PullMessageResponseHeader {
                suggest_which_broker_id,
                next_begin_offset,
                min_offset,
                max_offset,
                offset_delta,
                topic_sys_flag,
                group_sys_flag,
                forbidden_type,
            },
        )
}

fn query_offset() -> impl Strategy<Value = QueryConsumerOffsetRequestHeader> {
    (s(), s(), any::<i32>(), ob(), os()).prop_map(
        |(consumer_group, topic, queue_id, set_zero_if_not_found, broker_name)| {
            QueryConsumerOffsetRequestHeader {
                consumer_group,
                topic,
                queue_id,
                set_zero_if_not_found,
                broker_name,
            }
        },
    )
}

fn offset_response() -> impl Strategy<Value = OffsetResponseHeader> {
    any::<i64>().prop_map(|offset| OffsetResponseHeader { offset })
}

fn update_offset() -> impl Strategy<Value = UpdateConsumerOffsetRequestHeader> {
    (s(), s(), any::<i32>(), any::<i64>(), os()).prop_map(
        |(consumer_group, topic, queue_id, commit_offset, broker_name)| {
            UpdateConsumerOffsetRequestHeader {
                consumer_group,
                topic,
                queue_id,
                commit_offset,
                broker_name,
            }
        },
    )
}

fn max_offset() -> impl Strategy<Value = GetMaxOffsetRequestHeader> {
    (s(), any::<i32>(), ob(), os()).prop_map(|(topic, queue_id, committed, broker_name)| {
        GetMaxOffsetRequestHeader {
            topic,
            queue_id,
            committed,
            broker_name,
        }
    })
}

fn min_offset() -> impl Strategy<Value = GetMinOffsetRequestHeader> {
    (s(), any::<i32>(), os()).prop_map(|(topic, queue_id, broker_name)| GetMinOffsetRequestHeader {
        topic,
        queue_id,
        broker_name,
    })
}

fn search_offset() -> impl Strategy<Value = SearchOffsetRequestHeader> {
    let boundary = option::of(prop_oneof![
        Just(BoundaryType::Lower),
        Just(BoundaryType::Upper)
    ]);
    (s(), any::<i32>(), any::<i64>(), boundary, os()).prop_map(
        |(topic, queue_id, timestamp, boundary_type, broker_name)| SearchOffsetRequestHeader {
            topic,
            queue_id,
            timestamp,
            boundary_type,
            broker_name,
        },
    )
}

fn route_info() -> impl Strategy<Value = GetRouteInfoRequestHeader> {
    (s(), ob()).prop_map(
        |(topic, accept_standard_json_only)| GetRouteInfoRequestHeader {
            topic,
            accept_standard_json_only,
        },
    )
}

fn unregister() -> impl Strategy<Value = UnregisterClientRequestHeader> {
    (s(), os(), os()).prop_map(|(client_id, producer_group, consumer_group)| {
        UnregisterClientRequestHeader {
            client_id,
            producer_group,
            consumer_group,
        }
    })
}

fn consumer_list() -> impl Strategy<Value = GetConsumerListByGroupRequestHeader> {
    s().prop_map(|consumer_group| GetConsumerListByGroupRequestHeader { consumer_group })
}

fn send_back() -> impl Strategy<Value = ConsumerSendMsgBackRequestHeader> {
    (
        any::<i64>(),
        s(),
        any::<i32>(),
        os(),
        os(),
        ob(),
        oi32(),
        os(),
    )
        .prop_map(
            |(
                offset,
                group,
                delay_level,
                origin_msg_id,
                origin_topic,
                unit_mode,
                max_reconsume_times,
                broker_name,
            )| {
                ConsumerSendMsgBackRequestHeader {
                    offset,
                    group,
                    delay_level,
                    origin_msg_id,
                    origin_topic,
                    unit_mode,
                    max_reconsume_times,
                    broker_name,
                }
            },
        )
}

fn create_topic() -> impl Strategy<Value = CreateTopicRequestHeader> {
    (
        s(),
        s(),
        any::<i32>(),
        any::<i32>(),
        any::<i32>(),
        s(),
        oi32(),
        any::<bool>(),
        os(),
        ob(),
    )
        .prop_map(
            |(
                topic,
                default_topic,
                read_queue_nums,
                write_queue_nums,
                perm,
                topic_filter_type,
                topic_sys_flag,
                order,
                attributes,
                force,
            )| CreateTopicRequestHeader {
                topic,
                default_topic,
                read_queue_nums,
                write_queue_nums,
                perm,
                topic_filter_type,
                topic_sys_flag,
                order,
                attributes,
                force,
            },
        )
}

fn notify_ids_changed() -> impl Strategy<Value = NotifyConsumerIdsChangedRequestHeader> {
    s().prop_map(|consumer_group| NotifyConsumerIdsChangedRequestHeader { consumer_group })
}

fn reset_offset() -> impl Strategy<Value = ResetOffsetRequestHeader> {
    (s(), s(), any::<i64>(), any::<bool>(), oi32(), oi64()).prop_map(
        |(topic, group, timestamp, is_force, queue_id, offset)| ResetOffsetRequestHeader {
            topic,
            group,
            timestamp,
            is_force,
            queue_id,
            offset,
        },
    )
}

fn running_info() -> impl Strategy<Value = GetConsumerRunningInfoRequestHeader> {
    (s(), s(), ob()).prop_map(|(consumer_group, client_id, jstack_enable)| {
        GetConsumerRunningInfoRequestHeader {
            consumer_group,
            client_id,
            jstack_enable,
        }
    })
}

fn consume_directly() -> impl Strategy<Value = ConsumeMessageDirectlyResultRequestHeader> {
    (s(), os(), os(), os(), os(), oi32(), oi32()).prop_map(
        |(
            consumer_group,
            client_id,
            msg_id,
            broker_name,
            topic,
            topic_sys_flag,
            group_sys_flag,
        )| {
            ConsumeMessageDirectlyResultRequestHeader {
                consumer_group,
                client_id,
                msg_id,
                broker_name,
                topic,
                topic_sys_flag,
                group_sys_flag,
            }
        },
    )
}

fn check_transaction() -> impl Strategy<Value = CheckTransactionStateRequestHeader> {
    (os(), any::<i64>(), any::<i64>(), os(), os(), os(), os()).prop_map(
        |(
            topic,
            tran_state_table_offset,
            commit_log_offset,
            msg_id,
            transaction_id,
            offset_msg_id,
            broker_name,
        )| {
            CheckTransactionStateRequestHeader {
                topic,
                tran_state_table_offset,
                commit_log_offset,
                msg_id,
                transaction_id,
                offset_msg_id,
                broker_name,
            }
        },
    )
}

fn consumer_status() -> impl Strategy<Value = GetConsumerStatusRequestHeader> {
    (s(), s(), os()).prop_map(
        |(topic, group, client_addr)| GetConsumerStatusRequestHeader {
            topic,
            group,
            client_addr,
        },
    )
}

/// Checks both round trips for one header value.
fn check<H>(code: RequestCode, h: &H) -> Result<(), TestCaseError>
where
    H: CommandHeader + PartialEq + std::fmt::Debug,
{
    let fields = h.to_ext_fields();
    let back = H::read_from(&fields).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&back, h);

    let cmd = RemotingCommand::request(code, h);
    prop_assert_eq!(&cmd.ext_fields, &fields);
    let back: H = cmd
        .decode_header()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&back, h);
    Ok(())
}

macro_rules! roundtrip {
    ($($test:ident: $strategy:expr, $code:expr;)*) => {
        proptest! {
            $(
                #[test]
                fn $test(h in $strategy) {
                    check($code, &h)?;
                }
            )*
        }
    };
}

roundtrip! {
    send_message_v1: send_v1(), RequestCode::SEND_MESSAGE;
    send_message_v2: send_v2(), RequestCode::SEND_MESSAGE_V2;
    send_message_response: send_response(), RequestCode::SEND_MESSAGE;
    end_transaction_request: end_transaction(), RequestCode::END_TRANSACTION;
    pull_message_request: pull_request(), RequestCode::PULL_MESSAGE;
    pull_message_response: pull_response(), RequestCode::PULL_MESSAGE;
    query_consumer_offset_request: query_offset(), RequestCode::QUERY_CONSUMER_OFFSET;
    offset_response_header: offset_response(), RequestCode::GET_MAX_OFFSET;
    update_consumer_offset_request: update_offset(), RequestCode::UPDATE_CONSUMER_OFFSET;
    get_max_offset_request: max_offset(), RequestCode::GET_MAX_OFFSET;
    get_min_offset_request: min_offset(), RequestCode::GET_MIN_OFFSET;
    search_offset_request: search_offset(), RequestCode::SEARCH_OFFSET_BY_TIMESTAMP;
    get_route_info_request: route_info(), RequestCode::GET_ROUTEINFO_BY_TOPIC;
    unregister_client_request: unregister(), RequestCode::UNREGISTER_CLIENT;
    get_consumer_list_request: consumer_list(), RequestCode::GET_CONSUMER_LIST_BY_GROUP;
    consumer_send_msg_back_request: send_back(), RequestCode::CONSUMER_SEND_MSG_BACK;
    create_topic_request: create_topic(), RequestCode::UPDATE_AND_CREATE_TOPIC;
    notify_consumer_ids_changed: notify_ids_changed(), RequestCode::NOTIFY_CONSUMER_IDS_CHANGED;
    reset_offset_request: reset_offset(), RequestCode::RESET_CONSUMER_CLIENT_OFFSET;
    get_consumer_running_info_request: running_info(), RequestCode::GET_CONSUMER_RUNNING_INFO;
    consume_message_directly_request: consume_directly(), RequestCode::CONSUME_MESSAGE_DIRECTLY;
    check_transaction_state_request: check_transaction(), RequestCode::CHECK_TRANSACTION_STATE;
    get_consumer_status_request: consumer_status(), RequestCode::GET_CONSUMER_STATUS_FROM_CLIENT;
}

/// V1 key → V2 key.
const V1_TO_V2: [(&str, &str); 14] = [
    ("producerGroup", "a"),
    ("topic", "b"),
    ("defaultTopic", "c"),
    ("defaultTopicQueueNums", "d"),
    ("queueId", "e"),
    ("sysFlag", "f"),
    ("bornTimestamp", "g"),
    ("flag", "h"),
    ("properties", "i"),
    ("reconsumeTimes", "j"),
    ("unitMode", "k"),
    ("maxReconsumeTimes", "l"),
    ("batch", "m"),
    ("bname", "n"),
];

proptest! {
    #[test]
    fn send_v1_and_v2_carry_the_same_values(h in send_v1()) {
        let v1 = h.to_ext_fields();
        let v2 = SendMessageRequestHeaderV2::from(h.clone()).to_ext_fields();
        prop_assert_eq!(v1.len(), v2.len());
        for (k1, k2) in V1_TO_V2 {
            prop_assert_eq!(v1.get(k1), v2.get(k2), "{} vs {}", k1, k2);
        }
        prop_assert_eq!(SendMessageRequestHeader::from(SendMessageRequestHeaderV2::from(h.clone())), h);
    }

    #[test]
    fn reading_arbitrary_fields_never_panics(
        fields in proptest::collection::hash_map(
            prop_oneof![
                Just("topic".to_owned()), Just("queueId".to_owned()), Just("a".to_owned()),
                Just("e".to_owned()), Just("offset".to_owned()), Just("isForce".to_owned()),
                Just("boundaryType".to_owned()), any::<String>(),
            ],
            any::<String>(),
            0..8,
        )
    ) {
        let _ = SendMessageRequestHeader::read_from(&fields);
        let _ = SendMessageRequestHeaderV2::read_from(&fields);
        let _ = OffsetResponseHeader::read_from(&fields);
        let _ = ResetOffsetRequestHeader::read_from(&fields);
        let _ = SearchOffsetRequestHeader::read_from(&fields);
        let _ = PullMessageResponseHeader::read_from(&fields);
    }
}

#[test]
fn empty_header_has_no_fields() {
    assert!(EmptyHeader.to_ext_fields().is_empty());
    let cmd = RemotingCommand::request(RequestCode::HEART_BEAT, &EmptyHeader);
    assert!(cmd.ext_fields.is_empty());
    assert_eq!(cmd.decode_header::<EmptyHeader>().unwrap(), EmptyHeader);
}

#[test]
fn route_header_asks_for_standard_json() {
    let f = GetRouteInfoRequestHeader::new("T1").to_ext_fields();
    assert_eq!(f.get("topic").map(String::as_str), Some("T1"));
    assert_eq!(
        f.get("acceptStandardJsonOnly").map(String::as_str),
        Some("true")
    );
}
