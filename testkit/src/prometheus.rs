//! Reading metrics rendered in the Prometheus text format (a scrape or
//! `PrometheusHandle::render`).

use std::collections::BTreeMap;

/// The samples of metric `name` whose labels contain `label` (e.g.
/// `group="g1"`): labels text (without the braces) → value. Comment lines
/// and samples without labels are left out.
///
/// ```
/// let body = "# TYPE lag gauge\nlag{group=\"g\",queue=\"1\"} 3\nlag{group=\"h\",queue=\"1\"} 5\n";
/// let got = rmq_testkit::prometheus::samples(body, "lag", "group=\"g\"");
/// assert_eq!(got.into_iter().collect::<Vec<_>>(), [("group=\"g\",queue=\"1\"".to_owned(), 3.0)]);
/// ```
pub fn samples(body: &str, name: &str, label: &str) -> BTreeMap<String, f64> {
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let labels = series.strip_prefix(name)?.strip_prefix('{')?;
            if !labels.contains(label) {
                return None;
            }
            Some((labels.trim_end_matches('}').to_owned(), value.parse().ok()?))
        })
        .collect()
}
