//! `rmq-bench chart --input RESULTS.json --output CHART.svg`: the bar chart of a run as SVG.
//!
//! One panel per (scenario, metric) present in the results, one bar per client (the median)
//! with a whisker from min to max; the same panels as bench/README.md's table.

use std::fmt::Write as _;

use serde::Deserialize;

use crate::args::Flags;
use crate::error::{BenchError, Result};

/// `<ts>.json` as bench/runner.py writes it (only what the chart reads).
#[derive(Debug, Deserialize)]
struct Doc {
    #[serde(default)]
    config: serde_json::Map<String, serde_json::Value>,
    results: Vec<Row>,
}

#[derive(Debug, Deserialize)]
struct Row {
    scenario: String,
    metric: String,
    client: String,
    median: f64,
    min: f64,
    max: f64,
}

/// (scenario, metric, title, scale to the unit of the title).
const PANELS: &[(&str, &str, &str, f64)] = &[
    (
        "drain",
        "msgs_per_s",
        "Drain: messages/s (higher is better)",
        1.0,
    ),
    (
        "drain",
        "cpu_s_per_msg",
        "Drain: CPU µs per message (lower is better)",
        1e6,
    ),
    (
        "drain",
        "peak_rss_bytes",
        "Drain: peak RSS MiB (lower is better)",
        1.0 / 1_048_576.0,
    ),
    (
        "latency",
        "p50_ms",
        "Latency: p50 ms (lower is better)",
        1.0,
    ),
    (
        "latency",
        "p99_ms",
        "Latency: p99 ms (lower is better)",
        1.0,
    ),
    (
        "latency",
        "p999_ms",
        "Latency: p99.9 ms (lower is better)",
        1.0,
    ),
    (
        "produce-sync",
        "msgs_per_s",
        "Produce sync: messages/s (higher is better)",
        1.0,
    ),
    (
        "produce-async",
        "msgs_per_s",
        "Produce async: messages/s (higher is better)",
        1.0,
    ),
    (
        "produce-tx",
        "msgs_per_s",
        "Produce transactional: messages/s (higher is better)",
        1.0,
    ),
    (
        "produce-batching",
        "msgs_per_s",
        "Produce async, auto-batching beside plain: messages/s (higher is better)",
        1.0,
    ),
    (
        "ceiling",
        "msgs_per_s",
        "Ceiling (in-process fake broker): messages/s (higher is better)",
        1.0,
    ),
    (
        "ceiling",
        "cpu_s_per_msg",
        "Ceiling: client CPU µs per message (lower is better)",
        1e6,
    ),
    (
        "grpc-produce-sync",
        "msgs_per_s",
        "gRPC produce sync: messages/s (higher is better)",
        1.0,
    ),
    (
        "grpc-produce-async",
        "msgs_per_s",
        "gRPC produce async: messages/s (higher is better)",
        1.0,
    ),
    (
        "grpc-drain",
        "msgs_per_s",
        "gRPC drain: messages/s (higher is better)",
        1.0,
    ),
    (
        "grpc-drain",
        "cpu_s_per_msg",
        "gRPC drain: CPU µs per message (lower is better)",
        1e6,
    ),
    (
        "grpc-drain",
        "peak_rss_bytes",
        "gRPC drain: peak RSS MiB (lower is better)",
        1.0 / 1_048_576.0,
    ),
];

fn color(client: &str) -> &'static str {
    match client
        .split("-tls")
        .next()
        .unwrap_or(client)
        .trim_end_matches("-signed")
    {
        "rmq-push" | "rmq-producer" | "rmq-grpc" | "rmq-grpc-simple" | "rmq-grpc-push" => "#d64541",
        "rmq-pull" => "#e67e22",
        "raw-pull" | "raw-send" => "#969696",
        "java-push" | "java-producer" | "java-grpc" | "java-grpc-simple" | "java-grpc-push" => {
            "#3465a4"
        }
        "go-push" => "#00adb5",
        "rocketmq-rust-push" => "#75507b",
        _ => "#646464",
    }
}

fn fmt_value(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Escapes text for an SVG text node or attribute.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn cfg_str(cfg: &serde_json::Map<String, serde_json::Value>, key: &str) -> String {
    match cfg.get(key) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Null) | None => String::new(),
        Some(v) => v.to_string(),
    }
}

/// The SVG document of `doc`.
/// The scenarios a panel of `scenario` covers, each with its title:
/// `latency` is also run per rate (`latency-<rate>`), one panel per rate,
/// lowest first.
fn scenario_variants(doc: &Doc, scenario: &str, title: &str) -> Vec<(String, String)> {
    if scenario != "latency" {
        return vec![(scenario.to_owned(), title.to_owned())];
    }
    let mut rates: Vec<u64> = doc
        .results
        .iter()
        .filter_map(|r| r.scenario.strip_prefix("latency-")?.parse().ok())
        .collect();
    rates.sort_unstable();
    rates.dedup();
    let mut out = vec![(scenario.to_owned(), title.to_owned())];
    out.extend(rates.into_iter().map(|rate| {
        let title = title.replacen("Latency", &format!("Latency at {rate} msg/s"), 1);
        (format!("latency-{rate}"), title)
    }));
    out
}

fn render(doc: &Doc) -> String {
    const WIDTH: f64 = 1000.0;
    const LABEL_W: f64 = 260.0;
    const BAR_H: f64 = 22.0;
    const GAP: f64 = 6.0;
    let mut panels: Vec<(String, f64, Vec<&Row>)> = Vec::new();
    for &(scenario, metric, title, scale) in PANELS {
        for (scenario, title) in scenario_variants(doc, scenario, title) {
            let bars: Vec<&Row> = doc
                .results
                .iter()
                .filter(|r| r.scenario == scenario && r.metric == metric)
                .collect();
            if !bars.is_empty() {
                panels.push((title, scale, bars));
            }
        }
    }
    let rows: usize = panels.iter().map(|(_, _, b)| b.len()).sum();
    #[allow(clippy::cast_precision_loss)]
    let height = 70.0 + panels.len() as f64 * 52.0 + rows as f64 * (BAR_H + GAP) + 20.0;
    let mut s = String::new();
    let c = &doc.config;
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="14">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="16" y="30" font-size="22" font-weight="bold">rmq benchmark</text>"#
    );
    let sub = format!(
        "RocketMQ {} · {} × {} B · {} queues · {} rep · {} cores · {}",
        cfg_str(c, "rocketmq_version"),
        cfg_str(c, "count"),
        cfg_str(c, "size"),
        cfg_str(c, "queues"),
        cfg_str(c, "repetitions"),
        cfg_str(c, "cores"),
        cfg_str(c, "timestamp"),
    );
    let _ = writeln!(
        s,
        r##"<text x="16" y="52" fill="#5a5a5a" font-size="12">{}</text>"##,
        esc(&sub)
    );
    let mut y = 70.0;
    let span = WIDTH - LABEL_W - 120.0;
    for (title, scale, bars) in &panels {
        let _ = writeln!(
            s,
            r#"<text x="16" y="{}" font-weight="bold">{}</text>"#,
            y + 22.0,
            esc(title)
        );
        y += 36.0;
        let vmax = bars.iter().map(|r| r.max * scale).fold(0.0_f64, f64::max);
        let vmax = if vmax > 0.0 { vmax } else { 1.0 };
        for r in bars {
            let w = (r.median * scale / vmax * span).max(0.0);
            let lo = r.min * scale / vmax * span + LABEL_W;
            let hi = r.max * scale / vmax * span + LABEL_W;
            let mid = y + BAR_H / 2.0;
            let _ = writeln!(
                s,
                r#"<text x="16" y="{}">{}</text>"#,
                y + 16.0,
                esc(&r.client)
            );
            let _ = writeln!(
                s,
                r#"<rect x="{LABEL_W}" y="{y}" width="{w:.1}" height="{BAR_H}" fill="{}"/>"#,
                color(&r.client)
            );
            let _ = writeln!(
                s,
                r##"<path d="M{lo:.1} {mid}H{hi:.1}M{lo:.1} {}V{}M{hi:.1} {}V{}" stroke="#141414" stroke-width="2"/>"##,
                y + 4.0,
                y + BAR_H - 4.0,
                y + 4.0,
                y + BAR_H - 4.0,
            );
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{}">{}</text>"#,
                (LABEL_W + w).max(hi) + 8.0,
                y + 16.0,
                fmt_value(r.median * scale)
            );
            y += BAR_H + GAP;
        }
        let _ = writeln!(
            s,
            r##"<line x1="16" x2="{}" y1="{}" y2="{}" stroke="#dcdcdc"/>"##,
            WIDTH - 16.0,
            y + 6.0,
            y + 6.0
        );
        y += 16.0;
    }
    s.push_str("</svg>\n");
    s
}

/// The `chart` mode: reads `--input`, writes `--output`.
pub(crate) fn chart(flags: &Flags) -> Result<()> {
    let input: String = flags.required("input")?;
    let output: String = flags.required("output")?;
    let text = std::fs::read_to_string(&input)
        .map_err(|e| BenchError::Other(format!("cannot read {input}: {e}")))?;
    let doc: Doc = serde_json::from_str(&text)
        .map_err(|e| BenchError::Other(format!("{input} is not a results file: {e}")))?;
    std::fs::write(&output, render(&doc))
        .map_err(|e| BenchError::Other(format!("cannot write {output}: {e}")))?;
    println!("{output}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_panel_per_metric() {
        let doc: Doc = serde_json::from_str(
            r#"{"config":{"count":10,"rocketmq_version":"5.5.0"},"results":[
              {"scenario":"drain","metric":"msgs_per_s","client":"rmq-push","median":5,"min":4,"max":6},
              {"scenario":"drain","metric":"msgs_per_s","client":"java-push","median":3,"min":3,"max":3},
              {"scenario":"latency","metric":"p99_ms","client":"rmq-push","median":1.5,"min":1,"max":2}]}"#,
        )
        .unwrap();
        let svg = render(&doc);
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("Drain: messages/s") && svg.contains("Latency: p99 ms"));
        assert_eq!(svg.matches("<rect x=").count(), 3);
        assert!(svg.contains("RocketMQ 5.5.0 · 10"));
    }

    #[test]
    fn draws_a_latency_panel_per_rate() {
        let doc: Doc = serde_json::from_str(
            r#"{"config":{},"results":[
              {"scenario":"latency-20000","metric":"p99_ms","client":"rmq-push","median":30,"min":28,"max":40},
              {"scenario":"latency-1000","metric":"p99_ms","client":"rmq-push","median":4,"min":3,"max":5},
              {"scenario":"latency-1000","metric":"p99_ms","client":"go-push","median":4,"min":3,"max":5}]}"#,
        )
        .unwrap();
        let svg = render(&doc);
        let low = svg.find("Latency at 1000 msg/s: p99 ms").unwrap();
        let high = svg.find("Latency at 20000 msg/s: p99 ms").unwrap();
        assert!(low < high);
        assert_eq!(svg.matches("<rect x=").count(), 3);
    }
}
