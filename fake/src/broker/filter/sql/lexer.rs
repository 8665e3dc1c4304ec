//! The tokens of the dialect (Java `SelectorParser.jj`'s lexical part).

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
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
pub(super) fn lex(text: &str) -> Vec<Tok> {
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
