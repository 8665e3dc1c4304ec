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

use std::collections::HashMap;
use std::fmt;

use rmq_protocol::java_string_cmp;

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

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Gt,
    Ge,
    Lt,
    Le,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StrOp {
    Contains,
    StartsWith,
    EndsWith,
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
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
    fn is_boolean(&self) -> bool {
        match self {
            Expr::Const(v) => matches!(v, Value::Bool(_) | Value::Null),
            Expr::Prop(_) | Expr::Negate(_) => false,
            _ => true,
        }
    }
}

fn as_boolean(e: Expr) -> Result<Expr, SqlError> {
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

// ---------------------------------------------------------------- lexer

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Not,
    And,
    Or,
    Between,
    In,
    True,
    False,
    Null,
    Is,
    Contains,
    StartsWith,
    EndsWith,
    Decimal(String),
    Float(String),
    Str(String),
    Id(String),
    LParen,
    RParen,
    Comma,
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    Plus,
    Minus,
    Eof,
    Error(String),
}

fn keyword(word: &str) -> Option<Tok> {
    let up = word.to_ascii_uppercase();
    Some(match up.as_str() {
        "NOT" => Tok::Not,
        "AND" => Tok::And,
        "OR" => Tok::Or,
        "BETWEEN" => Tok::Between,
        "IN" => Tok::In,
        "TRUE" => Tok::True,
        "FALSE" => Tok::False,
        "NULL" => Tok::Null,
        "IS" => Tok::Is,
        "CONTAINS" => Tok::Contains,
        "STARTSWITH" => Tok::StartsWith,
        "ENDSWITH" => Tok::EndsWith,
        _ => return None,
    })
}

/// Tokens up to the end, or up to (and including) the first lexical error.
fn lex(text: &str) -> Vec<Tok> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0usize;
    let at = |i: usize| chars.get(i).copied();
    while let Some(c) = at(i) {
        if matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{c}') {
            i += 1;
            continue;
        }
        if c == '-' && at(i + 1) == Some('-') {
            // Line comment: must end with a line break.
            let mut j = i + 2;
            while at(j).is_some_and(|c| c != '\n' && c != '\r') {
                j += 1;
            }
            if at(j).is_none() {
                out.push(Tok::Error("unterminated line comment".to_owned()));
                return out;
            }
            i = j + 1;
            continue;
        }
        if c == '/' && at(i + 1) == Some('*') {
            let mut j = i + 2;
            loop {
                match (at(j), at(j + 1)) {
                    (Some('*'), Some('/')) => break,
                    (Some(_), _) => j += 1,
                    (None, _) => {
                        out.push(Tok::Error("unterminated block comment".to_owned()));
                        return out;
                    }
                }
            }
            i = j + 2;
            continue;
        }
        let single = match c {
            '(' => Some(Tok::LParen),
            ')' => Some(Tok::RParen),
            ',' => Some(Tok::Comma),
            '=' => Some(Tok::Eq),
            '+' => Some(Tok::Plus),
            '-' => Some(Tok::Minus),
            _ => None,
        };
        if let Some(t) = single {
            out.push(t);
            i += 1;
            continue;
        }
        match c {
            '<' => {
                let (t, n) = match at(i + 1) {
                    Some('>') => (Tok::Ne, 2),
                    Some('=') => (Tok::Le, 2),
                    _ => (Tok::Lt, 1),
                };
                out.push(t);
                i += n;
                continue;
            }
            '>' => {
                let (t, n) = if at(i + 1) == Some('=') {
                    (Tok::Ge, 2)
                } else {
                    (Tok::Gt, 1)
                };
                out.push(t);
                i += n;
                continue;
            }
            '\'' => {
                let mut s = String::new();
                let mut j = i + 1;
                loop {
                    match at(j) {
                        Some('\'') if at(j + 1) == Some('\'') => {
                            s.push('\'');
                            j += 2;
                        }
                        Some('\'') => break,
                        Some(ch) => {
                            s.push(ch);
                            j += 1;
                        }
                        None => {
                            out.push(Tok::Error("unterminated string literal".to_owned()));
                            return out;
                        }
                    }
                }
                out.push(Tok::Str(s));
                i = j + 1;
                continue;
            }
            _ => {}
        }
        if c.is_ascii_digit() || (c == '.' && at(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            let (tok, next) = number(&chars, i);
            out.push(tok);
            i = next;
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' || c == '$' {
            let mut j = i;
            while at(j).is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
                j += 1;
            }
            let word: String = chars.get(i..j).unwrap_or_default().iter().collect();
            out.push(keyword(&word).unwrap_or(Tok::Id(word)));
            i = j;
            continue;
        }
        out.push(Tok::Error(format!("lexical error at character {c:?}")));
        return out;
    }
    out.push(Tok::Eof);
    out
}

/// A numeric literal starting at `i`: DECIMAL (`0` or `[1-9][0-9]*`, with an
/// optional `L`) or FLOATING_POINT.
fn number(chars: &[char], i: usize) -> (Tok, usize) {
    let at = |i: usize| chars.get(i).copied();
    let digits = |mut j: usize| {
        while at(j).is_some_and(|c| c.is_ascii_digit()) {
            j += 1;
        }
        j
    };
    let text =
        |a: usize, b: usize| -> String { chars.get(a..b).unwrap_or_default().iter().collect() };
    let int_end = digits(i);
    let mut j = int_end;
    let mut is_float = false;
    if at(j) == Some('.') {
        is_float = true;
        j = digits(j + 1);
    }
    if matches!(at(j), Some('e' | 'E')) {
        let mut k = j + 1;
        if matches!(at(k), Some('+' | '-')) {
            k += 1;
        }
        if at(k).is_some_and(|c| c.is_ascii_digit()) {
            is_float = true;
            j = digits(k);
        }
    }
    if is_float {
        return (Tok::Float(text(i, j)), j);
    }
    // DECIMAL: a leading 0 is a literal of its own (JavaCC takes `0`, then
    // the next digits form another literal).
    let end = if at(i) == Some('0') { i + 1 } else { int_end };
    let mut lit = text(i, end);
    let mut next = end;
    if matches!(at(end), Some('l' | 'L')) {
        lit.push('L');
        next = end + 1;
    }
    (Tok::Decimal(lit), next)
}

// ---------------------------------------------------------------- parser

struct Parser {
    tokens: Vec<Tok>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> &Tok {
        self.tokens.get(self.pos).unwrap_or(&Tok::Eof)
    }

    fn peek2(&self) -> &Tok {
        self.tokens.get(self.pos + 1).unwrap_or(&Tok::Eof)
    }

    fn bump(&mut self) -> Tok {
        let t = self.peek().clone();
        self.pos += 1;
        t
    }

    fn fail<T>(&self, what: &str) -> Result<T, SqlError> {
        match self.peek() {
            Tok::Error(e) => Err(SqlError(e.clone())),
            t => Err(SqlError(format!("expected {what}, found {t:?}"))),
        }
    }

    fn expect(&mut self, want: &Tok, what: &str) -> Result<(), SqlError> {
        if self.peek() == want {
            self.pos += 1;
            Ok(())
        } else {
            self.fail(what)
        }
    }

    fn or_expr(&mut self) -> Result<Expr, SqlError> {
        let mut left = self.and_expr()?;
        while *self.peek() == Tok::Or {
            self.pos += 1;
            let right = self.and_expr()?;
            left = Expr::Or(Box::new(as_boolean(left)?), Box::new(as_boolean(right)?));
        }
        Ok(left)
    }

    fn and_expr(&mut self) -> Result<Expr, SqlError> {
        let mut left = self.equality()?;
        while *self.peek() == Tok::And {
            self.pos += 1;
            let right = self.equality()?;
            left = Expr::And(Box::new(as_boolean(left)?), Box::new(as_boolean(right)?));
        }
        Ok(left)
    }

    fn equality(&mut self) -> Result<Expr, SqlError> {
        let mut left = self.comparison()?;
        loop {
            match self.peek() {
                Tok::Eq => {
                    self.pos += 1;
                    let right = self.comparison()?;
                    left = create_equal(left, right)?;
                }
                Tok::Ne => {
                    self.pos += 1;
                    let right = self.comparison()?;
                    left = Expr::Not(Box::new(create_equal(left, right)?));
                }
                Tok::Is => {
                    self.pos += 1;
                    let not = if *self.peek() == Tok::Not {
                        self.pos += 1;
                        true
                    } else {
                        false
                    };
                    self.expect(&Tok::Null, "NULL")?;
                    let is_null = Expr::Eq(Box::new(left), Box::new(Expr::Const(Value::Null)));
                    left = if not {
                        Expr::Not(Box::new(is_null))
                    } else {
                        is_null
                    };
                }
                _ => return Ok(left),
            }
        }
    }

    fn comparison(&mut self) -> Result<Expr, SqlError> {
        let mut left = self.unary()?;
        loop {
            let (not, tok) = if *self.peek() == Tok::Not
                && matches!(
                    self.peek2(),
                    Tok::Contains | Tok::StartsWith | Tok::EndsWith | Tok::Between | Tok::In
                ) {
                self.pos += 1;
                (true, self.peek().clone())
            } else {
                (false, self.peek().clone())
            };
            left = match tok {
                Tok::Gt | Tok::Ge | Tok::Lt | Tok::Le => {
                    self.pos += 1;
                    let op = match tok {
                        Tok::Gt => Cmp::Gt,
                        Tok::Ge => Cmp::Ge,
                        Tok::Lt => Cmp::Lt,
                        _ => Cmp::Le,
                    };
                    let right = self.unary()?;
                    create_cmp(op, left, right)?
                }
                Tok::Contains | Tok::StartsWith | Tok::EndsWith => {
                    self.pos += 1;
                    let op = match tok {
                        Tok::Contains => StrOp::Contains,
                        Tok::StartsWith => StrOp::StartsWith,
                        _ => StrOp::EndsWith,
                    };
                    let search = self.string_literal()?;
                    Expr::Str(op, not, Box::new(left), search)
                }
                Tok::Between => {
                    self.pos += 1;
                    let low = self.unary()?;
                    self.expect(&Tok::And, "AND")?;
                    let high = self.unary()?;
                    create_between(left, low, high, not)?
                }
                Tok::In => {
                    self.pos += 1;
                    self.expect(&Tok::LParen, "(")?;
                    let mut list = vec![self.string_literal()?];
                    while *self.peek() == Tok::Comma {
                        self.pos += 1;
                        list.push(self.string_literal()?);
                    }
                    self.expect(&Tok::RParen, ")")?;
                    let Expr::Prop(name) = left else {
                        return Err(SqlError("Expected a property for In expression".to_owned()));
                    };
                    Expr::In(name, list, not)
                }
                _ => return Ok(left),
            };
        }
    }

    fn unary(&mut self) -> Result<Expr, SqlError> {
        match self.peek() {
            Tok::Plus => {
                self.pos += 1;
                self.unary()
            }
            Tok::Minus => {
                self.pos += 1;
                Ok(Expr::Negate(Box::new(self.unary()?)))
            }
            Tok::Not => {
                self.pos += 1;
                let e = self.unary()?;
                Ok(Expr::Not(Box::new(as_boolean(e)?)))
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Result<Expr, SqlError> {
        match self.bump() {
            Tok::Str(s) => Ok(Expr::Const(Value::Str(s))),
            Tok::Decimal(d) => decimal(&d),
            Tok::Float(f) => float(&f),
            Tok::True => Ok(Expr::Const(Value::Bool(true))),
            Tok::False => Ok(Expr::Const(Value::Bool(false))),
            Tok::Null => Ok(Expr::Const(Value::Null)),
            Tok::Id(name) => Ok(Expr::Prop(name)),
            Tok::LParen => {
                let e = self.or_expr()?;
                self.expect(&Tok::RParen, ")")?;
                Ok(e)
            }
            _ => {
                self.pos = self.pos.saturating_sub(1);
                self.fail("a value, a property or (")
            }
        }
    }

    fn string_literal(&mut self) -> Result<String, SqlError> {
        match self.peek().clone() {
            Tok::Str(s) => {
                self.pos += 1;
                Ok(s)
            }
            _ => self.fail("a string literal"),
        }
    }
}

fn decimal(text: &str) -> Result<Expr, SqlError> {
    let digits = text.trim_end_matches(['l', 'L']);
    let v: i64 = digits
        .parse()
        .map_err(|_| SqlError(format!("number {text} is out of range")))?;
    Ok(Expr::Const(match i32::try_from(v) {
        Ok(i) => Value::Int(i),
        Err(_) => Value::Long(v),
    }))
}

fn float(text: &str) -> Result<Expr, SqlError> {
    let v: f64 = text
        .parse()
        .map_err(|_| SqlError(format!("{text} is not a number")))?;
    // Java's checks: above Double.MAX_VALUE, below Double.MIN_VALUE (which
    // rejects 0.0, as the broker does).
    if v.is_infinite() {
        return Err(SqlError(format!("{text} is greater than {}", f64::MAX)));
    }
    if v < f64::from_bits(1) {
        return Err(SqlError(format!("{text} is less than 4.9E-324")));
    }
    Ok(Expr::Const(Value::Double(v)))
}

fn create_equal(left: Expr, right: Expr) -> Result<Expr, SqlError> {
    for e in [&left, &right] {
        if matches!(e, Expr::Const(Value::Null)) {
            return Err(SqlError("'NULL' cannot be compared".to_owned()));
        }
    }
    if let (Expr::Const(l), Expr::Const(r)) = (&left, &right) {
        if matches!(l, Value::Bool(_)) && !matches!(r, Value::Bool(_)) {
            return Err(SqlError(
                "a boolean cannot be compared with a value".to_owned(),
            ));
        }
    }
    Ok(Expr::Eq(Box::new(left), Box::new(right)))
}

fn check_less_than_operand(e: &Expr) -> Result<(), SqlError> {
    match e {
        Expr::Const(Value::Int(_) | Value::Long(_) | Value::Double(_)) => Ok(()),
        Expr::Const(_) => Err(SqlError(
            "only numbers can be compared by >, >=, <, <=".to_owned(),
        )),
        e if e.is_boolean() => Err(SqlError("a boolean value cannot be compared".to_owned())),
        _ => Ok(()),
    }
}

fn create_cmp(op: Cmp, left: Expr, right: Expr) -> Result<Expr, SqlError> {
    check_less_than_operand(&left)?;
    check_less_than_operand(&right)?;
    Ok(Expr::Cmp(op, Box::new(left), Box::new(right)))
}

fn create_between(value: Expr, low: Expr, high: Expr, not: bool) -> Result<Expr, SqlError> {
    if let (Expr::Const(l), Expr::Const(h)) = (&low, &high) {
        if matches!(l, Value::Null) || matches!(h, Value::Null) {
            return Err(SqlError(
                "Illegal values of between, values can not be null!".to_owned(),
            ));
        }
        if compare(h, l).map_err(|e| SqlError(e.0))? < 0 {
            return Err(SqlError(
                "Illegal values of between, left value must less than or equal to right value"
                    .to_owned(),
            ));
        }
    }
    Ok(if not {
        Expr::Or(
            Box::new(create_cmp(Cmp::Lt, value.clone(), low)?),
            Box::new(create_cmp(Cmp::Gt, value, high)?),
        )
    } else {
        Expr::And(
            Box::new(create_cmp(Cmp::Ge, value.clone(), low)?),
            Box::new(create_cmp(Cmp::Le, value, high)?),
        )
    })
}

// ---------------------------------------------------------------- evaluation

/// An evaluation error (Java throws; the message does not match).
#[derive(Debug)]
struct EvalError;

fn eval(e: &Expr, props: &HashMap<String, String>) -> Result<Value, EvalError> {
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
fn compare(lv: &Value, rv: &Value) -> Result<i32, SqlError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn m(sql: &str, pairs: &[(&str, &str)]) -> bool {
        Sql::compile(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .matches(&props(pairs))
    }

    #[test]
    fn numbers_compare_after_conversion() {
        assert!(m("a > 5", &[("a", "10")]));
        assert!(!m("a > 5", &[("a", "3")]));
        assert!(m("a >= 5 AND a <= 5", &[("a", "5")]));
        assert!(m("a = 5", &[("a", "5")]));
        assert!(m("a = 5.5", &[("a", "5.5")]));
        assert!(m("a > 2.5", &[("a", "3")]));
        // Integer.valueOf("5.5") fails: the whole expression fails.
        assert!(!m("a > 5", &[("a", "5.5")]));
        assert!(!m("a = 5 OR b = 'x'", &[("a", "abc"), ("b", "x")]));
        assert!(m("b = 'x' OR a = 5", &[("a", "abc"), ("b", "x")]));
        assert!(m("a BETWEEN 1 AND 3", &[("a", "2")]));
        assert!(m("a NOT BETWEEN 1 AND 3", &[("a", "4")]));
        assert!(m("a > -1", &[("a", "0")]));
        assert!(m("a > 3000000000", &[("a", "3000000001")]));
    }

    #[test]
    fn strings_and_nulls() {
        assert!(m("color = 'red'", &[("color", "red")]));
        assert!(!m("color = 'red'", &[("color", "blue")]));
        assert!(m("color <> 'red'", &[("color", "blue")]));
        assert!(!m("color <> 'red'", &[]), "NULL <> 'red' is NULL");
        assert!(m("color IS NULL", &[]));
        assert!(m("color IS NOT NULL", &[("color", "x")]));
        assert!(m("color IN ('red', 'blue')", &[("color", "blue")]));
        assert!(m("color NOT IN ('red')", &[("color", "blue")]));
        assert!(!m("color NOT IN ('red')", &[]));
        assert!(m("s CONTAINS 'ell'", &[("s", "hello")]));
        assert!(m("s NOT CONTAINS 'x'", &[("s", "hello")]));
        assert!(m(
            "s STARTSWITH 'he' AND s ENDSWITH 'lo'",
            &[("s", "hello")]
        ));
        assert!(!m("s STARTSWITH 'he'", &[]));
        assert!(m("'it''s' = s", &[("s", "it's")]));
        // Two strings compared by > are compared as doubles.
        assert!(m("a > b", &[("a", "10"), ("b", "9")]));
        assert!(!m("a > b", &[("a", "x"), ("b", "9")]));
    }

    #[test]
    fn logic_is_three_valued() {
        assert!(m("a = 1 OR b = 2", &[("b", "2")]));
        assert!(!m("a = 1 AND b = 2", &[("b", "2")]));
        assert!(m("NOT (a = 1)", &[("a", "2")]));
        assert!(!m("NOT (a = 1)", &[]));
        assert!(m("TRUE", &[]));
        assert!(!m("FALSE OR NULL", &[]));
        assert!(m("(a = 1 OR a = 2) AND b = 'y'", &[("a", "2"), ("b", "y")]));
        // A property alone is a boolean cast: strings are never TRUE.
        assert!(!m("flag", &[("flag", "true")]));
        assert!(m("flag = TRUE", &[("flag", "true")]));
    }

    #[test]
    fn keywords_ignore_case_and_comments_are_skipped() {
        assert!(m(
            "a > 1 and b is not null -- c\n",
            &[("a", "2"), ("b", "x")]
        ));
        assert!(m("/* x */ a between 1 and 2", &[("a", "1")]));
        // The parser stops after the expression (one token of lookahead).
        assert!(m("a = 1 junk", &[("a", "1")]));
    }

    #[test]
    fn compile_errors_like_the_broker() {
        for bad in [
            "",
            "a =",
            "a = NULL",
            "TRUE = 1",
            "'x' > 1",
            "a > TRUE",
            "a BETWEEN 5 AND 1",
            "a IN (1, 2)",
            "5 IN ('a')",
            "a = 1 #",
            "'abc'",
            "1 + 2",
            "a > 0.0",
            "a > 99999999999999999999",
            "(a = 1",
            "a = 'x",
            "a != 1",
        ] {
            assert!(Sql::compile(bad).is_err(), "{bad:?} compiles");
        }
    }

    #[test]
    fn unrelated_types_compare_as_minus_one() {
        // Boolean vs number: __compare answers -1.
        assert_eq!(compare(&Value::Bool(true), &Value::Int(1)).unwrap(), -1);
        assert!(compare(&Value::Int(1), &Value::Str("x".into())).is_err());
    }
}
