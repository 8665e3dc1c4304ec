//! Unit tests of `rmq produce`: message templates, generated bodies, properties.

use bytes::Bytes;

use super::args::{ProduceArgs, parse_property};
use super::message::{Template, generated_body};
use clap::Parser;

#[derive(Parser)]
struct Wrap {
    #[command(flatten)]
    args: ProduceArgs,
}

fn template(extra: &[&str]) -> Template {
    let mut argv = vec!["x", "T"];
    argv.extend_from_slice(extra);
    Template::new(&Wrap::parse_from(argv).args)
}

#[test]
fn json_lines_become_messages() {
    let t = template(&["--tags", "default", "--keys", "k0", "-p", "a=1"]);
    let m = t
        .parse(
            r#"{"body":"paid","keys":["k1","k2"],"properties":{"region":"eu"}}"#,
            true,
            1,
        )
        .unwrap();
    assert_eq!(m.body, Bytes::from("paid"));
    assert_eq!(m.tags(), Some("default"));
    assert_eq!(m.keys().collect::<Vec<_>>(), ["k1", "k2", "k0"]);
    assert_eq!(m.property("region"), Some("eu"));
    assert_eq!(m.property("a"), Some("1"));
    let own = t
        .parse(r#"{"body":"x","tags":"mine","keys":"one"}"#, true, 2)
        .unwrap();
    assert_eq!(own.tags(), Some("mine"));
    let bad = t.parse("{\"bod\": 1}", true, 7).unwrap_err();
    assert!(bad.to_string().starts_with("line 7:"), "{bad}");
    let raw = t.parse("{not json}", false, 1).unwrap();
    assert_eq!(raw.body, Bytes::from("{not json}"));
}

#[test]
fn priority_and_lite_topic() {
    let m =
        template(&["--priority", "7", "--lite-topic", "order-42"]).message(Bytes::from("x"), None);
    assert_eq!(m.priority(), Some(7));
    assert_eq!(m.lite_topic(), Some("order-42"));
    let negative = template(&["--priority", "-1"]).message(Bytes::from("x"), None);
    assert_eq!(
        negative.priority(),
        Some(-1),
        "refused by the producer, with its reason"
    );
    let plain = template(&[]).message(Bytes::from("x"), None);
    assert_eq!((plain.priority(), plain.lite_topic()), (None, None));
}

#[test]
fn generated_bodies_have_the_size() {
    assert_eq!(generated_body(0).len(), 0);
    assert_eq!(generated_body(1000).len(), 1000);
    assert!(parse_property("novalue").is_err());
    assert_eq!(parse_property("a=b=c").unwrap(), ("a".into(), "b=c".into()));
}
