//! ACL credentials and request signing (Java `AclClientRPCHook`,
//! `AclUtils.combineRequestContent`, `AclSigner`), and the recognition of
//! the brokers' authentication and authorization refusals.
//!
//! The signature is the same on the wire for ACL 1.0 (4.9.x `aclEnable`)
//! and ACL 2.0 (5.x `authenticationEnabled`): the request gets the ext field
//! `AccessKey` (and `SecurityToken` when set); the values of all ext fields
//! but `Signature`, in the order of their keys (Java `TreeMap`: UTF-16 code
//! units), are concatenated as UTF-8, the body is appended, and
//! `Base64(HmacSHA1(secret key, content))` goes into `Signature`.

use std::cmp::Ordering;
use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac as _};
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::RpcHook;
use sha1::Sha1;

use crate::error::{Error, Result};

/// The environment variable read for the default access key.
pub const ACCESS_KEY_ENV: &str = "RMQ_ACCESS_KEY";
/// The environment variable read for the default secret key.
pub const SECRET_KEY_ENV: &str = "RMQ_SECRET_KEY";
/// The environment variable read for the default security token (optional).
pub const SECURITY_TOKEN_ENV: &str = "RMQ_SECURITY_TOKEN";

/// Ext field carrying the access key (Java `SessionCredentials.ACCESS_KEY`).
pub const ACCESS_KEY_FIELD: &str = "AccessKey";
/// Ext field carrying the signature (Java `SessionCredentials.SIGNATURE`).
pub const SIGNATURE_FIELD: &str = "Signature";
/// Ext field carrying the security token (Java `SessionCredentials.SECURITY_TOKEN`).
pub const SECURITY_TOKEN_FIELD: &str = "SecurityToken";

/// How long a consumer's queue waits after a broker refused its
/// credentials or permissions before pulling again: ten times the ordinary
/// error delay, so that a wrong key or a missing ACL does not turn into a
/// stream of refused requests, while a fixed ACL is picked up within
/// seconds.
pub const AUTH_FAILURE_BACKOFF: Duration = Duration::from_secs(10);

/// An access key / secret key pair, plus an optional security token (Java
/// `SessionCredentials`), for brokers with ACL 1.0 (4.9.x) or ACL 2.0 (5.x,
/// where the access key is the user name and the secret key its password).
///
/// `Debug` shows the access key only; the secret key and the token are
/// never printed or logged.
///
/// ```
/// use rmq_client_core::Credentials;
///
/// let c = Credentials::new("alice", "s3cret-key").with_security_token("tok");
/// assert_eq!(c.access_key(), "alice");
/// assert!(!format!("{c:?}").contains("s3cret"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    access_key: String,
    secret_key: String,
    pub(crate) security_token: Option<String>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .field("secret_key", &"<redacted>")
            .field(
                "security_token",
                &self.security_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl Credentials {
    /// Credentials with `access_key` and `secret_key`, no security token.
    pub fn new(access_key: impl Into<String>, secret_key: impl Into<String>) -> Self {
        Credentials {
            access_key: access_key.into(),
            secret_key: secret_key.into(),
            security_token: None,
        }
    }

    /// Adds a security token (sent as ext field `SecurityToken` and signed).
    pub fn with_security_token(mut self, token: impl Into<String>) -> Self {
        self.security_token = Some(token.into());
        self
    }

    /// The access key (the user name on 5.x).
    pub fn access_key(&self) -> &str {
        &self.access_key
    }

    /// Whether a security token is set.
    pub fn has_security_token(&self) -> bool {
        self.security_token.is_some()
    }

    /// The secret key, for a transport that signs its own requests (the
    /// 5.x proxy's gRPC calls). Never log it; `Debug` leaves it out.
    pub fn secret_key(&self) -> &str {
        &self.secret_key
    }

    /// The security token, if set (same care as the
    /// [`secret_key`](Self::secret_key)).
    pub fn security_token(&self) -> Option<&str> {
        self.security_token.as_deref()
    }

    /// Credentials from `RMQ_ACCESS_KEY` / `RMQ_SECRET_KEY` (and the
    /// optional `RMQ_SECURITY_TOKEN`); `None` when neither key is set.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when only one of the two keys is set, or one is empty.
    pub fn from_env() -> Result<Option<Credentials>> {
        let get = |name: &str| std::env::var(name).ok();
        match (get(ACCESS_KEY_ENV), get(SECRET_KEY_ENV)) {
            (None, None) => Ok(None),
            (Some(ak), Some(sk)) => {
                let mut c = Credentials::new(ak, sk);
                if let Some(token) = get(SECURITY_TOKEN_ENV).filter(|t| !t.is_empty()) {
                    c = c.with_security_token(token);
                }
                c.validate()?;
                Ok(Some(c))
            }
            (Some(_), None) => Err(Error::Config(format!(
                "{ACCESS_KEY_ENV} is set but {SECRET_KEY_ENV} is not: set both, or neither"
            ))),
            (None, Some(_)) => Err(Error::Config(format!(
                "{SECRET_KEY_ENV} is set but {ACCESS_KEY_ENV} is not: set both, or neither"
            ))),
        }
    }

    /// Checks that neither key is empty.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.access_key.trim().is_empty() {
            return Err(Error::Config("the access key is empty".into()));
        }
        if self.secret_key.is_empty() {
            return Err(Error::Config(format!(
                "the secret key of access key {:?} is empty",
                self.access_key
            )));
        }
        Ok(())
    }
}

/// The [`RpcHook`] that signs every request with [`Credentials`] (Java
/// `AclClientRPCHook`). [`ClientConfigBuilder::credentials`](crate::ClientConfigBuilder::credentials)
/// installs it; it is public for users of the remoting client alone.
///
/// Signing costs one HMAC-SHA1 over the header values and the body (no
/// copy of the body) and one small sort of the header keys.
#[derive(Clone)]
pub struct AclSigner {
    access_key: String,
    security_token: Option<String>,
    /// Keyed once; cloned per request (no per-request key schedule).
    mac: Hmac<Sha1>,
}

impl fmt::Debug for AclSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AclSigner")
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

impl AclSigner {
    /// A signer for `credentials`.
    pub fn new(credentials: &Credentials) -> Self {
        AclSigner {
            access_key: credentials.access_key.clone(),
            security_token: credentials.security_token.clone(),
            mac: keyed_mac(credentials.secret_key.as_bytes()),
        }
    }

    /// The access key requests are signed for.
    pub fn access_key(&self) -> &str {
        &self.access_key
    }

    /// Adds `AccessKey` (and `SecurityToken`) to `request` and sets its
    /// `Signature` (replacing one already there).
    pub fn sign(&self, request: &mut RemotingCommand) {
        request
            .ext_fields
            .insert(ACCESS_KEY_FIELD.to_owned(), self.access_key.clone());
        if let Some(token) = &self.security_token {
            request
                .ext_fields
                .insert(SECURITY_TOKEN_FIELD.to_owned(), token.clone());
        }
        let signature = self.signature(request);
        request
            .ext_fields
            .insert(SIGNATURE_FIELD.to_owned(), signature);
    }

    /// The signature of `request` as it is (ext fields and body).
    pub fn signature(&self, request: &RemotingCommand) -> String {
        let mut fields: Vec<(&str, &str)> = request
            .ext_fields
            .iter()
            .filter(|(k, _)| k.as_str() != SIGNATURE_FIELD)
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        fields.sort_unstable_by(|a, b| java_string_order(a.0, b.0));
        let mut mac = self.mac.clone();
        for (_, value) in &fields {
            mac.update(value.as_bytes());
        }
        mac.update(&request.body);
        BASE64.encode(mac.finalize().into_bytes())
    }
}

impl RpcHook for AclSigner {
    fn before_request(&self, _addr: &str, request: &mut RemotingCommand) {
        self.sign(request);
    }

    fn observes_responses(&self) -> bool {
        false
    }
}

/// HMAC-SHA1 keyed with `key` (RFC 2104: a key longer than the 64-byte
/// block is hashed first, a shorter one is padded with zeros), built from a
/// whole block so that no fallible constructor is involved.
fn keyed_mac(key: &[u8]) -> Hmac<Sha1> {
    use sha1::Digest as _;
    let mut block = hmac::digest::Key::<Hmac<Sha1>>::default();
    if key.len() > block.len() {
        let digest = Sha1::digest(key);
        block
            .iter_mut()
            .zip(digest.iter())
            .for_each(|(b, d)| *b = *d);
    } else {
        block.iter_mut().zip(key.iter()).for_each(|(b, k)| *b = *k);
    }
    <Hmac<Sha1> as hmac::digest::KeyInit>::new(&block)
}

/// Java `String.compareTo`: by UTF-16 code units (byte order for ASCII).
fn java_string_order(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.cmp(b)
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

/// What a broker refused (the payload of
/// [`Error::Auth`]): its `Display` names the broker, the
/// request, the access key, the topic and group when known, and the
/// broker's reason.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthRefusal {
    /// The broker's address.
    pub addr: String,
    /// The request code that was refused.
    pub request: RequestCode,
    /// The access key the request was signed with; `None` when the client
    /// has no credentials.
    pub access_key: Option<String>,
    /// The topic of the request, when it has one.
    pub topic: Option<String>,
    /// The producer or consumer group of the request, when it has one.
    pub group: Option<String>,
    /// The broker's response code (NO_PERMISSION on 5.x, SYSTEM_ERROR on 4.9.x).
    pub code: ResponseCode,
    /// The broker's remark (e.g. `check signature failed.`).
    pub remark: Option<String>,
}

impl fmt::Display for AuthRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} refused {:?}", self.addr, self.request)?;
        if let Some(t) = &self.topic {
            write!(f, " on topic {t:?}")?;
        }
        if let Some(g) = &self.group {
            write!(f, " for group {g:?}")?;
        }
        match &self.access_key {
            Some(k) => write!(f, " signed with access key {k:?}")?,
            None => write!(f, " (unsigned: no credentials configured)")?,
        }
        write!(
            f,
            ": {} (not authenticated or not authorized); check the access key and secret key, \
             and that the user may access the topic and group",
            self.remark.as_deref().unwrap_or("refused")
        )
    }
}

/// Whether a broker answer with `code` and `remark` is an authentication or
/// authorization refusal:
///
/// * 5.x (ACL 2.0) answers NO_PERMISSION (16) with remarks such as
///   `username cannot be null.`, `check signature failed.`,
///   `User:<name> is not found.` or `User:<name> has no permission to access
///   Topic:<t> from <ip>, no matched policies.`;
/// * 4.9.x (ACL 1.0) answers SYSTEM_ERROR (1) with an `AclException`
///   remark (`Check signature failed for accessKey=...`,
///   `No acl config for ...`, `No default permission for topic:...`, ...).
///
/// NO_PERMISSION for a topic or broker that forbids writes or reads (its
/// permission bits) is not an authentication refusal.
pub fn is_auth_refusal(code: ResponseCode, remark: Option<&str>) -> bool {
    let Some(remark) = remark else {
        return false;
    };
    let lower = remark.to_ascii_lowercase();
    if code == ResponseCode::NO_PERMISSION {
        const ACL2: [&str; 9] = [
            "username cannot be null",
            "check signature failed",
            "is not found",
            "has no permission to access",
            "no matched policies",
            "authentication",
            "authorization",
            "accesskey",
            "user:",
        ];
        return ACL2.iter().any(|m| lower.contains(m));
    }
    if code == ResponseCode::SYSTEM_ERROR {
        const ACL1: [&str; 7] = [
            "aclexception",
            "check signature failed",
            "no acl config for",
            "no accesskey is configured",
            "no default permission for",
            "no permission for",
            "accesskey",
        ];
        return ACL1.iter().any(|m| lower.contains(m));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request with `fields` and `body`, signed like Java's
    /// `AclClientRPCHook.doBeforeRequest`.
    fn signed(creds: &Credentials, fields: &[(&str, &str)], body: &[u8]) -> RemotingCommand {
        let mut cmd = RemotingCommand::new_request(RequestCode::SEND_MESSAGE);
        for (k, v) in fields {
            cmd.ext_fields.insert((*k).into(), (*v).into());
        }
        cmd.body = bytes::Bytes::copy_from_slice(body);
        AclSigner::new(creds).sign(&mut cmd);
        cmd
    }

    fn sig(cmd: &RemotingCommand) -> &str {
        cmd.ext_field(SIGNATURE_FIELD).unwrap()
    }

    // The expected values were computed with the Java client's
    // `AclClientRPCHook` (rocketmq-client 5.5.0) on the same inputs.

    #[test]
    fn java_vector_no_body() {
        let c = Credentials::new("rocketmq2", "12345678");
        let cmd = signed(&c, &[("topic", "orders"), ("consumerGroup", "g")], b"");
        assert_eq!(sig(&cmd), "GFpCJcZvaUaXOtjbaRf+AgdrOGk=");
        assert_eq!(cmd.ext_field(ACCESS_KEY_FIELD), Some("rocketmq2"));
        assert_eq!(cmd.ext_field(SECURITY_TOKEN_FIELD), None);
    }

    #[test]
    fn java_vector_body_and_token() {
        let c = Credentials::new("alice-ak", "alice-secret").with_security_token("tok");
        let cmd = signed(&c, &[("topic", "orders"), ("queueId", "3")], b"hello");
        assert_eq!(sig(&cmd), "wqnlkoZ67BoLmiOibTu52tD0uBg=");
        assert_eq!(cmd.ext_field(SECURITY_TOKEN_FIELD), Some("tok"));
    }

    #[test]
    fn java_vector_key_order_and_utf8_values() {
        let c = Credentials::new("AK", "SK");
        let fields = [("b", "2"), ("B", "1"), ("a", "订单"), ("Z", "z")];
        assert_eq!(
            sig(&signed(&c, &fields, b"")),
            "pv1xuG0nQcWJLXPAYDkXk95fLUk="
        );
    }

    #[test]
    fn java_vector_binary_body() {
        let c = Credentials::new("rocketmq2", "12345678");
        let body: Vec<u8> = (0..=255u8).collect();
        assert_eq!(sig(&signed(&c, &[], &body)), "zps9PJpLbEsp603NaA5i7h+O5vM=");
    }

    #[test]
    fn java_vector_stale_signature_is_replaced() {
        let c = Credentials::new("rocketmq2", "12345678");
        let cmd = signed(&c, &[("topic", "t"), ("Signature", "stale")], b"");
        assert_eq!(sig(&cmd), "/GWATEdyiQvDLHxSfNRJGygV2Ho=");
        // Signing twice gives the same signature (Signature is never signed).
        let mut again = cmd.clone();
        AclSigner::new(&c).sign(&mut again);
        assert_eq!(sig(&again), sig(&cmd));
    }

    #[test]
    fn long_keys_are_hashed_like_hmac() {
        let long = "k".repeat(100);
        let mut expected = <Hmac<Sha1> as hmac::Mac>::new_from_slice(long.as_bytes()).unwrap();
        expected.update(b"v");
        let mut ours = keyed_mac(long.as_bytes());
        ours.update(b"v");
        assert_eq!(
            ours.finalize().into_bytes(),
            expected.finalize().into_bytes()
        );
    }

    #[test]
    fn java_order_is_utf16() {
        // U+FF5E sorts after U+1F600 in UTF-8 byte order but before it in UTF-16.
        assert_eq!(
            java_string_order("\u{ff5e}", "\u{1f600}"),
            Ordering::Greater
        );
        assert_eq!(java_string_order("B", "a"), Ordering::Less);
    }

    #[test]
    fn secrets_never_in_debug() {
        let c = Credentials::new("alice", "very-secret-key").with_security_token("tok-secret");
        let text = format!("{c:?} {:?}", AclSigner::new(&c));
        assert!(text.contains("alice"), "{text}");
        assert!(!text.contains("very-secret-key"), "{text}");
        assert!(!text.contains("tok-secret"), "{text}");
    }

    #[test]
    fn refusals_of_both_lines_are_recognised() {
        let no_perm = ResponseCode::NO_PERMISSION;
        let sys = ResponseCode::SYSTEM_ERROR;
        for remark in [
            "username cannot be null.",
            "check signature failed.",
            "User:bob is not found.",
            "User:bob has no permission to access Topic:T from 127.0.0.1, no matched policies.",
        ] {
            assert!(is_auth_refusal(no_perm, Some(remark)), "{remark}");
        }
        for remark in [
            "org.apache.rocketmq.acl.common.AclException: Check signature failed for accessKey=rocketmq2",
            "No acl config for alice",
            "No accessKey is configured",
            "No default permission for topic:T",
        ] {
            assert!(is_auth_refusal(sys, Some(remark)), "{remark}");
        }
        assert!(!is_auth_refusal(
            no_perm,
            Some("the topic[T] sending message is forbidden")
        ));
        assert!(!is_auth_refusal(sys, Some("store putMessage return null")));
        assert!(!is_auth_refusal(no_perm, None));
        assert!(!is_auth_refusal(
            ResponseCode::SUCCESS,
            Some("check signature failed.")
        ));
    }
}
