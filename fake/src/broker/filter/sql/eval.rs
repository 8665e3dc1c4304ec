//! Evaluation on a message's properties: three-valued logic, Java's
//! conversions and comparisons.

use std::collections::HashMap;

use rmq_protocol::java_string_cmp;

use super::ast::{Cmp, Expr, StrOp, Value};
use super::compiled::SqlError;

/// An evaluation error (Java throws; the message does not match).
#[derive(Debug)]
pub(super) struct EvalError;

pub(super) fn eval(e: &Expr, props: &HashMap<String, String>) -> Result<Value, EvalError> {
    Ok(match e {
        Expr::Const(v) => v.clone(),
        Expr::Prop(name) => props
            .get(name)
            .map_or(Value::Null, |v| Value::Str(v.clone())),
        Expr::Not(inner) => match eval(inner, props)? {
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(!b),
            _ => return Err(EvalError),
        },
        Expr::Negate(inner) => match eval(inner, props)? {
            Value::Int(i) => Value::Int(i.wrapping_neg()),
            Value::Long(l) => Value::Long(l.wrapping_neg()),
            Value::Double(d) => Value::Double(-d),
            _ => Value::Null,
        },
        Expr::BoolCast(inner) => match eval(inner, props)? {
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(b),
            _ => Value::Bool(false),
        },
        Expr::Or(l, r) => {
            let lv = boolean(eval(l, props)?)?;
            if lv == Some(true) {
                return Ok(Value::Bool(true));
            }
            let rv = boolean(eval(r, props)?)?;
            match (lv, rv) {
                (_, Some(true)) => Value::Bool(true),
                (Some(false), Some(false)) => Value::Bool(false),
                _ => Value::Null,
            }
        }
        Expr::And(l, r) => {
            let lv = boolean(eval(l, props)?)?;
            if lv == Some(false) {
                return Ok(Value::Bool(false));
            }
            let rv = boolean(eval(r, props)?)?;
            match (lv, rv) {
                (_, Some(false)) => Value::Bool(false),
                (Some(true), Some(true)) => Value::Bool(true),
                _ => Value::Null,
            }
        }
        Expr::Eq(l, r) => {
            let lv = eval(l, props)?;
            let rv = eval(r, props)?;
            match (&lv, &rv) {
                (Value::Null, Value::Null) => Value::Bool(true),
                (Value::Null, _) => Value::Null,
                (_, Value::Null) => Value::Bool(false),
                _ if java_equals(&lv, &rv) => Value::Bool(true),
                _ => Value::Bool(compare(&lv, &rv).map_err(|_| EvalError)? == 0),
            }
        }
        Expr::Cmp(op, l, r) => {
            let lv = eval(l, props)?;
            if lv == Value::Null {
                return Ok(Value::Null);
            }
            let rv = eval(r, props)?;
            if rv == Value::Null {
                return Ok(Value::Null);
            }
            let answer = match (&lv, &rv) {
                (Value::Str(a), Value::Str(b)) => {
                    let (a, b) = (java_double(a), java_double(b));
                    match (a, b) {
                        (Some(a), Some(b)) => java_double_cmp(a, b),
                        _ => {
                            return Err(EvalError);
                        }
                    }
                }
                _ => compare(&lv, &rv).map_err(|_| EvalError)?,
            };
            Value::Bool(match op {
                Cmp::Gt => answer > 0,
                Cmp::Ge => answer >= 0,
                Cmp::Lt => answer < 0,
                Cmp::Le => answer <= 0,
            })
        }
        Expr::Str(op, not, l, search) => match eval(l, props)? {
            Value::Str(s) => {
                let hit = match op {
                    StrOp::Contains => s.contains(search.as_str()),
                    StrOp::StartsWith => s.starts_with(search.as_str()),
                    StrOp::EndsWith => s.ends_with(search.as_str()),
                };
                Value::Bool(hit != *not)
            }
            _ => Value::Bool(false),
        },
        Expr::In(name, list, not) => match props.get(name) {
            None => Value::Null,
            Some(v) => Value::Bool(list.iter().any(|s| s == v) != *not),
        },
    })
}

fn boolean(v: Value) -> Result<Option<bool>, EvalError> {
    match v {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(b)),
        _ => Err(EvalError),
    }
}

/// Java `Object.equals` on the boxed values: same type and value.
fn java_equals(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Long(x), Value::Long(y)) => x == y,
        (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits(),
        (Value::Str(x), Value::Str(y)) => x == y,
        _ => false,
    }
}

/// Java `Double.valueOf` (whitespace trimmed, an `f`/`d` suffix allowed).
fn java_double(s: &str) -> Option<f64> {
    let t = s.trim_matches(|c: char| c <= ' ');
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    if unsigned
        .chars()
        .any(|c| c.is_ascii_alphabetic() && !matches!(c, 'e' | 'E' | 'd' | 'D' | 'f' | 'F'))
    {
        // Only the exact words Java knows.
        return match unsigned {
            "NaN" | "Infinity" => t.replace("Infinity", "inf").parse().ok(),
            _ => None,
        };
    }
    let t = t.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(t);
    t.parse().ok()
}

/// Java `Double.compareTo`.
fn java_double_cmp(a: f64, b: f64) -> i32 {
    match a.total_cmp(&b) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    }
}

fn ord(o: std::cmp::Ordering) -> i32 {
    match o {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    }
}

fn parse_i32(s: &str) -> Result<i32, SqlError> {
    s.parse()
        .map_err(|_| SqlError(format!("For input string: \"{s}\"")))
}

fn parse_i64(s: &str) -> Result<i64, SqlError> {
    s.parse()
        .map_err(|_| SqlError(format!("For input string: \"{s}\"")))
}

fn parse_f64(s: &str) -> Result<f64, SqlError> {
    java_double(s).ok_or_else(|| SqlError(format!("For input string: \"{s}\"")))
}

/// Java `ComparisonExpression.__compare` with string conversion on (the
/// broker compiles with it): converts the left or right value to the
/// other's type, then `compareTo`; unrelated types give −1; a string that
/// does not parse is an error.
pub(super) fn compare(lv: &Value, rv: &Value) -> Result<i32, SqlError> {
    use Value::*;
    Ok(match (lv, rv) {
        (Bool(a), Bool(b)) => ord(a.cmp(b)),
        (Int(a), Int(b)) => ord(a.cmp(b)),
        (Long(a), Long(b)) => ord(a.cmp(b)),
        (Double(a), Double(b)) => java_double_cmp(*a, *b),
        (Str(a), Str(b)) => ord(java_string_cmp(a, b)),
        // Java casts the Boolean to String here and fails.
        (Bool(_), Str(_)) => return Err(SqlError("Boolean cannot be cast to String".to_owned())),
        (Bool(_), _) => -1,
        (Int(a), Long(b)) => ord(i64::from(*a).cmp(b)),
        (Int(a), Double(b)) => java_double_cmp(f64::from(*a), *b),
        (Int(a), Str(b)) => ord(a.cmp(&parse_i32(b)?)),
        (Long(a), Int(b)) => ord(a.cmp(&i64::from(*b))),
        (Long(a), Double(b)) => java_double_cmp(*a as f64, *b),
        (Long(a), Str(b)) => ord(a.cmp(&parse_i64(b)?)),
        (Double(a), Int(b)) => java_double_cmp(*a, f64::from(*b)),
        (Double(a), Long(b)) => java_double_cmp(*a, *b as f64),
        (Double(a), Str(b)) => java_double_cmp(*a, parse_f64(b)?),
        (Str(a), Bool(b)) => ord(a.eq_ignore_ascii_case("true").cmp(b)),
        (Str(a), Int(b)) => ord(parse_i32(a)?.cmp(b)),
        (Str(a), Long(b)) => ord(parse_i64(a)?.cmp(b)),
        (Str(a), Double(b)) => java_double_cmp(parse_f64(a)?, *b),
        _ => -1,
    })
}
