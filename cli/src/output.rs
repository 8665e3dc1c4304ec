//! What the commands print: messages (one line each, human or JSON), aligned
//! tables, and stdout writing that stops quietly when the reader goes away.

use std::io::{self, BufWriter, IsTerminal, Stdout, Write};

use base64::Engine as _;
use rmq::MessageExt;
use rmq::protocol::message::property;
use serde_json::{Map, Value, json};

use crate::error::{CliError, Result};
use crate::time::format_ms;

/// Buffered stdout; flushed per line on a terminal.
#[derive(Debug)]
pub(crate) struct Out {
    inner: BufWriter<Stdout>,
    terminal: bool,
}

impl Out {
    pub(crate) fn new() -> Self {
        Out {
            inner: BufWriter::new(io::stdout()),
            terminal: io::stdout().is_terminal(),
        }
    }

    /// Writes one line.
    ///
    /// # Errors
    ///
    /// [`CliError::Io`] (a broken pipe among them: see [`is_broken_pipe`]).
    pub(crate) fn line(&mut self, text: &str) -> Result<()> {
        writeln!(self.inner, "{text}").map_err(|e| CliError::io("cannot write to stdout", e))?;
        if self.terminal {
            self.flush()?;
        }
        Ok(())
    }

    pub(crate) fn flush(&mut self) -> Result<()> {
        self.inner
            .flush()
            .map_err(|e| CliError::io("cannot write to stdout", e))
    }
}

/// Whether `err` is stdout's reader having gone away (`rmq ... | head`).
pub(crate) fn is_broken_pipe(err: &CliError) -> bool {
    matches!(err, CliError::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
}

/// The user-visible properties: everything but the ones rendered apart.
fn user_properties(msg: &MessageExt) -> Map<String, Value> {
    let mut props: Vec<(&str, &str)> = msg.message.properties.iter().collect();
    props.sort();
    props
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Value::String(v.to_owned())))
        .collect()
}

/// One message as a JSON object (one line of `--json` output).
pub(crate) fn message_json(msg: &MessageExt) -> Value {
    let body = &msg.message.body;
    let (text, b64) = match std::str::from_utf8(body) {
        Ok(s) => (Value::String(s.to_owned()), Value::Null),
        Err(_) => (
            Value::Null,
            Value::String(base64::engine::general_purpose::STANDARD.encode(body)),
        ),
    };
    let mut v = json!({
        "topic": msg.message.topic,
        "broker": msg.broker_name,
        "queue_id": msg.queue_id,
        "queue_offset": msg.queue_offset,
        "msg_id": msg.msg_id,
        "offset_msg_id": msg.offset_msg_id,
        "tags": msg.message.tags(),
        "keys": msg.message.keys().collect::<Vec<_>>(),
        "born_timestamp": msg.born_timestamp,
        "store_timestamp": msg.store_timestamp,
        "born_host": msg.born_host.to_string(),
        "store_host": msg.store_host.to_string(),
        "reconsume_times": msg.reconsume_times,
        "properties": user_properties(msg),
        "body": text,
    });
    if !b64.is_null() {
        if let Some(o) = v.as_object_mut() {
            o.insert("body_base64".to_owned(), b64);
        }
    }
    v
}

/// One message on one line: queue and offset, store time, id, tags, keys,
/// then the body (control characters escaped; binary bodies summarized).
pub(crate) fn message_line(msg: &MessageExt) -> String {
    let mut line = format!(
        "{}#{}@{} {} {}",
        msg.broker_name,
        msg.queue_id,
        msg.queue_offset,
        format_ms(msg.store_timestamp),
        msg.msg_id
    );
    if let Some(tags) = msg.message.tags() {
        line.push_str(" tags=");
        line.push_str(tags);
    }
    if msg.message.property(property::KEYS).is_some() {
        line.push_str(" keys=");
        line.push_str(&msg.message.keys().collect::<Vec<_>>().join(","));
    }
    if msg.reconsume_times > 0 {
        line.push_str(&format!(" retry={}", msg.reconsume_times));
    }
    line.push_str(": ");
    line.push_str(&body_text(&msg.message.body));
    line
}

/// The body as one line of text.
pub(crate) fn body_text(body: &[u8]) -> String {
    match std::str::from_utf8(body) {
        Ok(s) if !s.chars().any(|c| c.is_control() && c != '\t') => s.to_owned(),
        Ok(s) => s.escape_debug().to_string(),
        Err(_) => {
            let shown = body.get(..32).unwrap_or(body);
            let hex: String = shown.iter().map(|b| format!("{b:02x}")).collect();
            let more = if body.len() > shown.len() { "…" } else { "" };
            format!("<{} bytes, binary: {hex}{more}>", body.len())
        }
    }
}

/// A text table: columns padded to their widest cell, numbers right-aligned.
#[derive(Debug)]
pub(crate) struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The lines of the table, header first.
    pub(crate) fn lines(&self) -> Vec<String> {
        let cols = self.header.len();
        let mut width = vec![0; cols];
        let mut numeric = vec![true; cols];
        for (i, h) in self.header.iter().enumerate() {
            width[i] = h.chars().count();
        }
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(cols) {
                width[i] = width[i].max(cell.chars().count());
                numeric[i] &= cell == "-" || cell.parse::<f64>().is_ok();
            }
        }
        let render = |cells: &[String]| {
            let mut line = String::new();
            for (i, cell) in cells.iter().enumerate().take(cols) {
                if i > 0 {
                    line.push_str("  ");
                }
                let pad = width[i].saturating_sub(cell.chars().count());
                let last = i + 1 == cols;
                if numeric[i] {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    if !last {
                        line.push_str(&" ".repeat(pad));
                    }
                }
            }
            line.trim_end().to_owned()
        };
        let mut out = vec![render(&self.header)];
        out.extend(self.rows.iter().map(|r| render(r)));
        out
    }

    /// Prints the table.
    pub(crate) fn print(&self, out: &mut Out) -> Result<()> {
        for line in self.lines() {
            out.line(&line)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align() {
        let mut t = Table::new(&["TOPIC", "QUEUE", "LAG"]);
        t.row(vec!["orders".into(), "0".into(), "12".into()]);
        t.row(vec!["t".into(), "10".into(), "-".into()]);
        assert_eq!(
            t.lines(),
            [
                "TOPIC   QUEUE  LAG",
                "orders      0   12",
                "t          10    -"
            ]
        );
    }

    #[test]
    fn bodies_stay_on_one_line() {
        assert_eq!(body_text(b"hello"), "hello");
        assert_eq!(body_text(b"a\nb"), "a\\nb");
        assert_eq!(body_text(&[0xff, 0x00]), "<2 bytes, binary: ff00>");
    }
}
