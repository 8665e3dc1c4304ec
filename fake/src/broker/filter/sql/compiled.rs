//! [`Sql`], a compiled expression, and [`SqlError`], why one does not compile.

use std::collections::HashMap;
use std::fmt;

use super::ast::{Expr, Value, as_boolean};
use super::eval::eval;
use super::lexer::{Tok, lex};
use super::parser::Parser;

/// Why an expression does not compile (the broker's `MQFilterException`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SqlError(pub(crate) String);

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Invalid MessageSelector. {}", self.0)
    }
}

/// A compiled expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sql {
    root: Expr,
}

impl Sql {
    /// Compiles `text` as the broker does.
    pub(crate) fn compile(text: &str) -> Result<Sql, SqlError> {
        let tokens = lex(text);
        let mut p = Parser { tokens, pos: 0 };
        let root = p.or_expr()?;
        let root = as_boolean(root)?;
        // The parser peeks one token past the expression: it must lex.
        if let Tok::Error(e) = p.peek() {
            return Err(SqlError(e.clone()));
        }
        Ok(Sql { root })
    }

    /// Whether the message with these properties matches.
    pub(crate) fn matches(&self, properties: &HashMap<String, String>) -> bool {
        matches!(eval(&self.root, properties), Ok(Value::Bool(true)))
    }
}
