//! The expression tree the parser builds and the evaluator walks.

use super::compiled::SqlError;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cmp {
    Gt,
    Ge,
    Lt,
    Le,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StrOp {
    Contains,
    StartsWith,
    EndsWith,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Expr {
    /// A literal; `boolean` for TRUE / FALSE / NULL (Java
    /// `BooleanConstantExpression`).
    Const(Value),
    Prop(String),
    Not(Box<Expr>),
    Negate(Box<Expr>),
    BoolCast(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Eq(Box<Expr>, Box<Expr>),
    Cmp(Cmp, Box<Expr>, Box<Expr>),
    Str(StrOp, bool, Box<Expr>, String),
    In(String, Vec<String>, bool),
}

impl Expr {
    /// Java `BooleanExpression`.
    pub(super) fn is_boolean(&self) -> bool {
        match self {
            Expr::Const(v) => matches!(v, Value::Bool(_) | Value::Null),
            Expr::Prop(_) | Expr::Negate(_) => false,
            _ => true,
        }
    }
}

pub(super) fn as_boolean(e: Expr) -> Result<Expr, SqlError> {
    if e.is_boolean() {
        Ok(e)
    } else if matches!(e, Expr::Prop(_)) {
        Ok(Expr::BoolCast(Box::new(e)))
    } else {
        Err(SqlError(
            "Expression will not result in a boolean value".to_owned(),
        ))
    }
}
