//! SDK clients, each built only where its feature is on, from one loaded configuration.

use aws_config::{BehaviorVersion, SdkConfig};
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use aws_smithy_runtime_api::client::interceptors::SharedInterceptor;

/// The HTTPS client every SDK client of a process sends with: hyper and rustls with the
/// `ring` provider, trusting the system's roots. The SDK's default client is the same but
/// for aws-lc: 399 KiB of code in a Lambda function against ring's 179 KiB, about 160 KB
/// of every zip (measured with `cargo bloat` and `bench/lambda_size.py`,
/// docs/performance.md). S3, DynamoDB and EventBridge need nothing ring lacks.
pub fn https_client() -> SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https()
}

/// The loaded AWS configuration (credentials, region, endpoint), from which each client a
/// process needs is built once.
#[derive(Clone)]
pub struct AwsConfig {
    conf: SdkConfig,
    interceptor: Option<SharedInterceptor>,
}

impl AwsConfig {
    /// Credentials, region and endpoint from the standard AWS environment
    /// (`AWS_ENDPOINT_URL` points every client at an emulator).
    pub async fn from_env() -> Self {
        let conf = aws_config::defaults(BehaviorVersion::latest())
            .http_client(https_client())
            .load()
            .await;
        Self::new(conf, None)
    }

    /// Clients from one SDK config, optionally with an interceptor on each (tests count
    /// calls with one).
    pub fn new(conf: SdkConfig, interceptor: Option<SharedInterceptor>) -> Self {
        Self { conf, interceptor }
    }

    /// With a custom endpoint (an emulator) S3 uses path-style addressing.
    #[cfg(feature = "s3")]
    pub fn s3(&self) -> aws_sdk_s3::Client {
        let path_style = self.conf.endpoint_url().is_some();
        let mut b = aws_sdk_s3::config::Builder::from(&self.conf).force_path_style(path_style);
        if let Some(i) = &self.interceptor {
            b = b.interceptor(i.clone());
        }
        aws_sdk_s3::Client::from_conf(b.build())
    }

    #[cfg(feature = "dynamodb")]
    pub fn dynamodb(&self) -> aws_sdk_dynamodb::Client {
        let mut b = aws_sdk_dynamodb::config::Builder::from(&self.conf);
        if let Some(i) = &self.interceptor {
            b = b.interceptor(i.clone());
        }
        aws_sdk_dynamodb::Client::from_conf(b.build())
    }

    #[cfg(feature = "eventbridge")]
    pub fn eventbridge(&self) -> aws_sdk_eventbridge::Client {
        let mut b = aws_sdk_eventbridge::config::Builder::from(&self.conf);
        if let Some(i) = &self.interceptor {
            b = b.interceptor(i.clone());
        }
        aws_sdk_eventbridge::Client::from_conf(b.build())
    }
}

/// All three clients, for tests and tools that touch every service.
#[cfg(all(feature = "s3", feature = "dynamodb", feature = "eventbridge"))]
#[derive(Clone)]
pub struct AwsClients {
    pub s3: aws_sdk_s3::Client,
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub eventbridge: aws_sdk_eventbridge::Client,
}

#[cfg(all(feature = "s3", feature = "dynamodb", feature = "eventbridge"))]
impl AwsClients {
    pub async fn from_env() -> Self {
        Self::from_config(&AwsConfig::from_env().await)
    }

    pub fn from_sdk_config(conf: &SdkConfig, interceptor: Option<SharedInterceptor>) -> Self {
        Self::from_config(&AwsConfig::new(conf.clone(), interceptor))
    }

    pub fn from_config(c: &AwsConfig) -> Self {
        Self {
            s3: c.s3(),
            dynamodb: c.dynamodb(),
            eventbridge: c.eventbridge(),
        }
    }
}
