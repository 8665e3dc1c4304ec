//! Which stored messages a pull may return (Java `ExpressionMessageFilter`):
//! TAG subscriptions by the tag's hash code kept in the consume queue, SQL92
//! subscriptions by evaluating the expression on the message's properties.

mod message;
pub(crate) mod sql;

pub(crate) use message::MessageFilter;
pub(crate) use sql::Sql;
