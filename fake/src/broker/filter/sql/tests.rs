//! Unit tests of the SQL92 filter: compiling and matching as the broker does.

use std::collections::HashMap;

use super::ast::Value;
use super::compiled::Sql;
use super::eval::compare;

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
