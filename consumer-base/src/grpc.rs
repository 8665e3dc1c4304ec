//! The session settings of a consumer that goes through a 5.x proxy
//! (`endpoint(..)`): the endpoint, and the credentials and TLS of the
//! builder's client configuration.

use rmq_client_core::ClientConfig;
use rmq_grpc::{GrpcConfig, GrpcCredentials};

/// A [`GrpcConfig`] for the proxy at `endpoint` with the client
/// configuration's request timeout and namespace (sent as the resource
/// namespace, as the Java gRPC client does), that signs with its
/// credentials and speaks TLS when it does.
///
/// # Errors
///
/// The endpoint or the credentials are invalid, the TLS files unusable,
/// or TLS is asked for by a build without this crate's `tls` feature (no
/// silent plaintext).
pub fn grpc_config(endpoint: &str, client: &ClientConfig) -> rmq_grpc::Result<GrpcConfig> {
    let mut grpc = GrpcConfig::new(endpoint)?
        .with_request_timeout(client.request_timeout())
        .with_namespace(client.namespace().as_str());
    if let Some(c) = client.credentials() {
        let mut creds = GrpcCredentials::new(c.access_key(), c.secret_key())?;
        if let Some(token) = c.security_token() {
            creds = creds.with_security_token(token)?;
        }
        grpc = grpc.with_credentials(creds);
    }
    #[cfg(feature = "tls")]
    if let Some(tls) = client.tls() {
        grpc = grpc.with_tls(tls.clone());
    }
    #[cfg(not(feature = "tls"))]
    if client.has_tls() {
        return Err(rmq_grpc::Error::InvalidCredentials(
            "the client configuration asks for TLS, but this build has no TLS towards the proxy: \
             enable the `tls` feature"
                .into(),
        ));
    }
    Ok(grpc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namespace_goes_to_the_proxy() {
        let client = ClientConfig::builder()
            .namesrv_addr("127.0.0.1:9876")
            .namespace("prod")
            .build()
            .unwrap();
        let grpc = grpc_config("127.0.0.1:8081", &client).unwrap();
        assert!(
            format!("{grpc:?}").contains("namespace: \"prod\""),
            "{grpc:?}"
        );
        let plain = ClientConfig::builder()
            .namesrv_addr("127.0.0.1:9876")
            .build()
            .unwrap();
        let grpc = grpc_config("127.0.0.1:8081", &plain).unwrap();
        assert!(format!("{grpc:?}").contains("namespace: \"\""), "{grpc:?}");
    }
}
