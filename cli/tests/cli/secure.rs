//! The command against the secured broker of the security tests (ACL + TLS enforcing + client
//! certificates required): signed and over mTLS it creates, produces and consumes; a wrong
//! secret is an authentication error naming the access key, exit code 1, the secret nowhere.

use std::time::Duration;

use rmq_testkit::secure::{SecureBroker, secure_broker};

use crate::support::RUN_TIMEOUT;

/// The secret keys of the script's accounts (`Credentials` does not expose them).
const USER_SECRET: &str = "rmq-user-secret";
const ADMIN_SECRET: &str = "rmq-admin-secret";

fn broker() -> SecureBroker {
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(secure_broker())
        .clone()
}

/// `rmq` against the secured broker, over mTLS, signed with `access_key`/`secret`.
fn secured(
    sec: &SecureBroker,
    access_key: &str,
    secret: &str,
    args: &[&str],
) -> std::process::Output {
    let mut cmd = assert_cmd::Command::new(crate::support::bin());
    cmd.env_remove("NAMESRV_ADDR")
        .env_remove("RMQ_ACCESS_KEY")
        .env_remove("RMQ_SECRET_KEY")
        .env_remove("RMQ_PROFILE")
        .env_remove("RMQ_CONFIG")
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("rmq-cli-secure-no-config"),
        )
        .args(["--namesrv", &sec.namesrv_addr, "--tls-ca"])
        .arg(&sec.ca)
        .arg("--tls-cert")
        .arg(&sec.client_cert)
        .arg("--tls-key")
        .arg(&sec.client_key)
        .args([
            "--access-key",
            access_key,
            "--secret-key",
            secret,
            "--timeout",
            "5s",
        ])
        .args(args)
        .timeout(RUN_TIMEOUT);
    cmd.output().expect("rmq runs")
}

#[test]
fn signed_over_mtls_it_creates_produces_and_consumes_and_a_wrong_secret_is_refused() {
    let sec = broker();
    let topic = rmq_testkit::unique_name("cli_sec");
    let group = rmq_testkit::unique_name("cli_sec_g");
    let admin = sec.admin.access_key().to_owned();
    let user = sec.user.access_key().to_owned();

    let created = secured(
        &sec,
        &admin,
        ADMIN_SECRET,
        &["topic", "create", &topic, "--queues", "2"],
    );
    assert!(created.status.success(), "topic create: {created:?}");
    let produced = secured(
        &sec,
        &user,
        USER_SECRET,
        &["produce", &topic, "one", "two", "three"],
    );
    assert!(produced.status.success(), "produce: {produced:?}");
    let consumed = secured(
        &sec,
        &user,
        USER_SECRET,
        &[
            "consume", &topic, "--group", &group, "--from", "first", "--count", "3",
        ],
    );
    assert!(consumed.status.success(), "consume: {consumed:?}");
    let out = String::from_utf8_lossy(&consumed.stdout);
    for body in ["one", "two", "three"] {
        assert!(out.contains(body), "{body} consumed: {out}");
    }

    let started = std::time::Instant::now();
    let refused = secured(&sec, &user, "not-the-secret", &["produce", &topic, "x"]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains(&user), "the access key is named: {err}");
    assert!(
        err.to_lowercase().contains("auth") || err.contains("signature"),
        "an authentication error: {err}"
    );
    assert!(
        !err.contains("not-the-secret"),
        "the secret is not printed: {err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "refused promptly"
    );

    let help = assert_cmd::Command::new(crate::support::bin())
        .env("RMQ_SECRET_KEY", "env-secret-value")
        .args(["produce", "--help"])
        .output()
        .expect("help");
    assert!(!String::from_utf8_lossy(&help.stdout).contains("env-secret-value"));
}
