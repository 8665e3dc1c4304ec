//! The parser (Java `SelectorParser.jj`'s grammar) and the checks done
//! while compiling (Java `ComparisonExpression.create*`).

use super::ast::{Cmp, Expr, StrOp, Value, as_boolean};
use super::compiled::SqlError;
use super::eval::compare;
use super::lexer::Tok;

pub(super) struct Parser {
    pub(super) tokens: Vec<Tok>,
    pub(super) pos: usize,
}

impl Parser {
    pub(super) fn peek(&self) -> &Tok {
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

    pub(super) fn or_expr(&mut self) -> Result<Expr, SqlError> {
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
