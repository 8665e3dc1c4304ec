//! [`GrpcCredentials`]: the access key / secret key signature of every
//! call to an ACL-enabled proxy, as the Java gRPC client writes it
//! (`org.apache.rocketmq.client.java.rpc.Signature`):
//!
//! - `x-mq-date-time`: the UTC time of the request, `yyyyMMdd'T'HHmmss'Z'`;
//! - `authorization`: `MQv2-HMAC-SHA1 Credential=<access key>,
//!   SignedHeaders=x-mq-date-time, Signature=<hex HMAC-SHA1 of the date
//!   time, keyed with the secret key>`;
//! - `x-mq-session-token`: the security token, when there is one.
//!
//! The proxy (ACL 2.0's `DefaultAuthenticationContextBuilder`) takes the
//! user from `Credential`, decodes the hex signature and checks it against
//! its own HMAC of the date time.

use std::fmt;
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac as _};
use sha1::Sha1;
use tonic::metadata::{AsciiMetadataValue, MetadataMap};

use crate::error::{Error, Result};

/// The algorithm name of the `authorization` header.
const ALGORITHM: &str = "MQv2-HMAC-SHA1";

/// An access key and secret key (and optional security token) that sign
/// every call to the proxy. `Debug` shows the access key only.
///
/// ```
/// use rmq_grpc::GrpcCredentials;
///
/// let c = GrpcCredentials::new("alice", "s3cret").unwrap();
/// assert!(!format!("{c:?}").contains("s3cret"));
/// ```
#[derive(Clone)]
pub struct GrpcCredentials {
    access_key: String,
    /// The HMAC keyed with the secret key (the key is not kept otherwise).
    mac: Hmac<Sha1>,
    security_token: Option<AsciiMetadataValue>,
}

impl fmt::Debug for GrpcCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcCredentials")
            .field("access_key", &self.access_key)
            .field("secret_key", &"<redacted>")
            .field(
                "security_token",
                &self.security_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl PartialEq for GrpcCredentials {
    /// Equal when the access keys and the tokens are; the secret keys are
    /// not compared (they are not kept).
    fn eq(&self, other: &Self) -> bool {
        self.access_key == other.access_key && self.security_token == other.security_token
    }
}

impl Eq for GrpcCredentials {}

impl GrpcCredentials {
    /// Credentials of `access_key` and `secret_key`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidCredentials`] when a key is empty, or the access key
    /// is not printable ASCII without `,` (it travels in a header).
    pub fn new(access_key: impl Into<String>, secret_key: impl AsRef<[u8]>) -> Result<Self> {
        let access_key = access_key.into();
        let secret = secret_key.as_ref();
        if access_key.is_empty() || secret.is_empty() {
            return Err(Error::InvalidCredentials(
                "the access key and the secret key must not be empty".into(),
            ));
        }
        if !access_key
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b',')
        {
            return Err(Error::InvalidCredentials(format!(
                "the access key {access_key:?} must be printable ASCII without spaces or ','"
            )));
        }
        let mac = <Hmac<Sha1> as hmac::digest::KeyInit>::new_from_slice(secret).map_err(|_| {
            Error::InvalidCredentials("the secret key cannot key an HMAC-SHA1".into())
        })?;
        Ok(GrpcCredentials {
            access_key,
            mac,
            security_token: None,
        })
    }

    /// Adds a security token (`x-mq-session-token`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidCredentials`] when it is empty or not printable ASCII.
    pub fn with_security_token(mut self, token: impl AsRef<str>) -> Result<Self> {
        let token = token.as_ref();
        let value = AsciiMetadataValue::try_from(token)
            .ok()
            .filter(|_| !token.is_empty())
            .ok_or_else(|| {
                Error::InvalidCredentials("the security token must be printable ASCII".into())
            })?;
        self.security_token = Some(value);
        Ok(self)
    }

    /// The access key.
    pub fn access_key(&self) -> &str {
        &self.access_key
    }

    /// The hex HMAC-SHA1 of `content`, upper case (as the Java client).
    fn signature(&self, content: &str) -> String {
        let mut mac = self.mac.clone();
        mac.update(content.as_bytes());
        let digest = mac.finalize().into_bytes();
        let mut hex = String::with_capacity(digest.len() * 2);
        for b in digest {
            let _ = write!(hex, "{b:02X}");
        }
        hex
    }

    /// Writes the signature headers of a request made at `now`.
    pub(crate) fn sign(&self, md: &mut MetadataMap, now: SystemTime) {
        let date_time = utc_date_time(now);
        let authorization = format!(
            "{ALGORITHM} Credential={}, SignedHeaders=x-mq-date-time, Signature={}",
            self.access_key,
            self.signature(&date_time)
        );
        // Both are ASCII by construction (checked access key, digits, hex).
        if let (Ok(dt), Ok(auth)) = (
            AsciiMetadataValue::try_from(date_time),
            AsciiMetadataValue::try_from(authorization),
        ) {
            md.insert("x-mq-date-time", dt);
            md.insert("authorization", auth);
        }
        if let Some(token) = &self.security_token {
            md.insert("x-mq-session-token", token.clone());
        }
    }
}

/// `t` in UTC as `yyyyMMdd'T'HHmmss'Z'`.
fn utc_date_time(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        u32::try_from(m).unwrap_or(1),
        u32::try_from(d).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn date_time_is_utc_in_the_java_format() {
        assert_eq!(utc_date_time(UNIX_EPOCH), "19700101T000000Z");
        // 2024-02-29 23:59:58 UTC (a leap day).
        let t = UNIX_EPOCH + Duration::from_secs(1_709_251_198);
        assert_eq!(utc_date_time(t), "20240229T235958Z");
        // 2026-12-04 19:23:39 UTC.
        let t = UNIX_EPOCH + Duration::from_secs(1_796_412_219);
        assert_eq!(utc_date_time(t), "20261204T192339Z");
    }

    #[test]
    fn signature_is_the_hmac_sha1_of_the_date_time_in_upper_hex() {
        // RFC 2202 test case 2: key "Jefe", data "what do ya want for nothing?".
        let c = GrpcCredentials::new("ak", "Jefe").unwrap();
        assert_eq!(
            c.signature("what do ya want for nothing?"),
            "EFFCDF6AE5EB2FA2D27416D5F184DF9C259A7C79"
        );
    }

    #[test]
    fn sign_writes_the_headers_the_proxy_reads() {
        let c = GrpcCredentials::new("rmq-user", "secret")
            .unwrap()
            .with_security_token("tok")
            .unwrap();
        let mut md = MetadataMap::new();
        c.sign(&mut md, UNIX_EPOCH + Duration::from_secs(86_400));
        assert_eq!(md.get("x-mq-date-time").unwrap(), "19700102T000000Z");
        let auth = md
            .get("authorization")
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        let expected = format!(
            "MQv2-HMAC-SHA1 Credential=rmq-user, SignedHeaders=x-mq-date-time, Signature={}",
            c.signature("19700102T000000Z")
        );
        assert_eq!(auth, expected);
        assert_eq!(md.get("x-mq-session-token").unwrap(), "tok");
    }

    #[test]
    fn bad_keys_are_refused_and_secrets_never_printed() {
        assert!(GrpcCredentials::new("", "s").is_err());
        assert!(GrpcCredentials::new("a", "").is_err());
        assert!(GrpcCredentials::new("a,b", "s").is_err());
        assert!(GrpcCredentials::new("a b", "s").is_err());
        let c = GrpcCredentials::new("a", "top-secret")
            .unwrap()
            .with_security_token("tok-secret")
            .unwrap();
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("top-secret") && !shown.contains("tok-secret"),
            "{shown}"
        );
        assert!(c.clone().with_security_token("").is_err());
    }
}
