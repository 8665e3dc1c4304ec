//! Help with examples everywhere, completions, configuration and errors.

use crate::support::{bin, broker, namesrv};

fn plain(args: &[&str]) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::new(bin());
    cmd.env_remove("NAMESRV_ADDR")
        .env_remove("RMQ_PROFILE")
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("rmq-cli-no-config"),
        )
        .args(args)
        .timeout(crate::support::RUN_TIMEOUT);
    cmd
}

#[test]
fn every_command_has_help_with_examples() {
    for path in [
        &[][..],
        &["produce"],
        &["consume"],
        &["tail"],
        &["topic"],
        &["topic", "list"],
        &["topic", "create"],
        &["topic", "describe"],
        &["topic", "delete"],
        &["group"],
        &["group", "lag"],
        &["group", "reset"],
        &["msg"],
        &["msg", "get"],
        &["msg", "query"],
        &["cluster"],
        &["bench"],
        &["completions"],
    ] {
        let mut args = path.to_vec();
        args.push("--help");
        let out = plain(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Examples:"),
            "no examples in `rmq {}`",
            args.join(" ")
        );
    }
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let out = plain(&["completions", shell]).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("rmq") && text.contains("produce"), "{shell}");
    }
    assert_eq!(
        plain(&["completions", "tcsh"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn errors_print_the_cause_chain_and_exit_non_zero() {
    let none = plain(&["cluster"]).output().unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&none.stderr)
            .contains("pass --namesrv HOST:PORT, set NAMESRV_ADDR")
    );

    let down = plain(&["--namesrv", "127.0.0.1:1", "--timeout", "1s", "cluster"])
        .output()
        .unwrap();
    assert_eq!(down.status.code(), Some(1));
    let text = String::from_utf8_lossy(&down.stderr);
    assert!(text.starts_with("error: no name server answered"), "{text}");
    assert!(
        text.contains("\n  caused by: ") && text.contains("Connection refused"),
        "{text}"
    );

    let bad_from = plain(&[
        "--namesrv",
        "127.0.0.1:1",
        "tail",
        "t",
        "--from",
        "yesterday",
    ])
    .output()
    .unwrap();
    assert_eq!(bad_from.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_from.stderr).contains("RFC 3339"));
}

#[test]
fn profiles_and_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(
        &file,
        format!(
            "default_profile = \"test\"\n[profiles.test]\nnamesrv = \"{}\"\ntimeout = \"5s\"\n\
             [profiles.down]\nnamesrv = \"127.0.0.1:1\"\n[profiles.secure]\nnamesrv = \"{}\"\naccess_key = \"AK\"\n",
            namesrv(),
            namesrv()
        ),
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let by_default = plain(&["--config", f, "cluster"]).output().unwrap();
    assert!(by_default.status.success(), "{by_default:?}");
    assert!(String::from_utf8_lossy(&by_default.stdout).contains(&broker().broker_addr));
    // An explicit profile beats NAMESRV_ADDR; NAMESRV_ADDR beats the default profile.
    let explicit = plain(&[
        "--config",
        f,
        "--profile",
        "down",
        "--timeout",
        "1s",
        "cluster",
    ])
    .env("NAMESRV_ADDR", namesrv())
    .output()
    .unwrap();
    assert_eq!(explicit.status.code(), Some(1));
    let env = plain(&["--config", f, "cluster"])
        .env("NAMESRV_ADDR", "127.0.0.1:1")
        .env("RMQ_PROFILE", "test")
        .output()
        .unwrap();
    assert!(env.status.success(), "RMQ_PROFILE chooses the profile");
    let secure = plain(&["--config", f, "--profile", "secure", "cluster"])
        .output()
        .unwrap();
    assert_eq!(secure.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&secure.stderr).contains("access_key"));
    let missing = plain(&["--config", "/nonexistent/rmq.toml", "cluster"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read the config file"));
}
