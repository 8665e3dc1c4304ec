//! Storing a message (parking it in the schedule topic when it has a delay
//! level) and delivering the delayed messages that are due.

use std::sync::Arc;
use std::time::Duration;

use rmq_protocol::message::{property, sys_flag};
use tracing::warn;

use super::state::{BrokerShared, BrokerState};
use super::store::{NewMessage, PutError, StoredMsg};
use super::topics::SCHEDULE_TOPIC;
use crate::config::FlushPolicy;

impl BrokerShared {
    /// Stores a message, parking it in the schedule topic when it has a
    /// delay level, and wakes the pulls waiting for it.
    pub(crate) fn put_message(
        &self,
        st: &mut BrokerState,
        m: NewMessage,
    ) -> std::result::Result<Arc<StoredMsg>, PutError> {
        self.store_message(st, m, true)
    }

    /// [`put_message`](Self::put_message); `schedule` false for a delayed
    /// message being delivered (its DELAY stays, it is not parked again).
    fn store_message(
        &self,
        st: &mut BrokerState,
        mut m: NewMessage,
        schedule: bool,
    ) -> std::result::Result<Arc<StoredMsg>, PutError> {
        let now = self.now_ms();
        let mut due = None;
        let tx = sys_flag::transaction_type(m.meta.sys_flag);
        if schedule
            && (tx == sys_flag::TRANSACTION_NOT_TYPE || tx == sys_flag::TRANSACTION_COMMIT_TYPE)
        {
            let level = m
                .properties
                .get(property::DELAY)
                .and_then(|d| d.trim().parse::<i32>().ok())
                .unwrap_or(0);
            if level > 0 {
                let level = level.min(self.cfg.max_delay_level());
                let delay = self.cfg.delay_of(level).unwrap_or(Duration::from_secs(1));
                let due_ms =
                    now.saturating_add(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX));
                m.properties
                    .insert(property::DELAY.to_owned(), level.to_string());
                m.properties.insert(
                    property::REAL_TOPIC.to_owned(),
                    std::mem::take(&mut m.topic),
                );
                m.properties
                    .insert(property::REAL_QID.to_owned(), m.queue_id.to_string());
                m.topic = SCHEDULE_TOPIC.to_owned();
                m.queue_id = level - 1;
                m.tags_code = due_ms;
                due = Some(due_ms);
            }
        }
        let stored = st
            .store
            .put(m, now, self.cfg.flavor, self.cfg.max_message_size)?;
        if self.cfg.flush == FlushPolicy::Always {
            st.store.flush();
        }
        match due {
            Some(due_ms) => {
                st.schedule.add(due_ms, stored.commit_log_offset);
                self.schedule_changed.notify_one();
            }
            None => {
                let max = st.store.max_offset(&stored.topic, stored.queue_id);
                let (code, props) = (stored.tags_code, &stored.properties);
                st.holds.arrived(&stored.topic, stored.queue_id, max, |f| {
                    f.matches(code, props)
                });
            }
        }
        Ok(stored)
    }

    /// Delivers the delayed messages that are due (every one with `all`)
    /// into their real topics; returns how many.
    pub(super) fn deliver_due(&self, all: bool) -> usize {
        let mut st = self.state();
        if !st.running {
            return 0;
        }
        let due = if all {
            st.schedule.take_all()
        } else {
            st.schedule.take_due(self.now_ms())
        };
        let count = due.len();
        for offset in due {
            let Some(parked) = st.store.by_commit_offset(offset).cloned() else {
                continue;
            };
            // Java `messageTimeUp` clears DELAY and sets WAIT=false after it
            // encoded the properties: the delivered message keeps both as
            // they were.
            let properties = parked.properties.clone();
            let topic = properties
                .get(property::REAL_TOPIC)
                .cloned()
                .unwrap_or_default();
            let queue_id = properties
                .get(property::REAL_QID)
                .and_then(|q| q.parse().ok())
                .unwrap_or(0);
            let msg = NewMessage::again(&parked, topic, queue_id, properties);
            if let Err(e) = self.store_message(&mut st, msg, false) {
                warn!(broker = %self.name, error = ?e, "fake: a delayed message could not be delivered");
            }
        }
        count
    }
}
