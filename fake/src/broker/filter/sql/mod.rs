//! The broker's SQL92 property filter: a small parser and evaluator of the
//! dialect RocketMQ brokers accept (Java `SelectorParser.jj` and the
//! `org.apache.rocketmq.filter.expression` classes, derived from ActiveMQ's
//! JMS selectors).
//!
//! An own evaluator rather than a general SQL parser (`sqlparser`): the
//! dialect is small but not standard SQL (`CONTAINS`, `STARTSWITH`,
//! `ENDSWITH`, only string lists in `IN`, `<>` but no `!=`, no `LIKE`), and
//! what decides whether a message matches is Java's evaluation rules, not the
//! grammar: three-valued logic with `NULL`, property values that are strings
//! converted to the literal's type (`Integer.valueOf`, `Long.valueOf`,
//! `Double.valueOf`, `Boolean.valueOf`), a comparison of unrelated types that
//! yields −1, an evaluation error (a number that does not parse) that makes
//! the whole expression fail, and the checks done when compiling (`a = NULL`,
//! `'x' > 1` and `BETWEEN 5 AND 1` are rejected). A general SQL AST would
//! still need all of that, plus code to reject what RocketMQ does not accept.
//!
//! What matches: the expression evaluates to `TRUE` on the message's
//! properties (user and system ones alike); `FALSE`, `NULL` and errors do not
//! match.

mod ast;
mod compiled;
mod eval;
mod lexer;
mod parser;
#[cfg(test)]
mod tests;

pub(crate) use compiled::Sql;
