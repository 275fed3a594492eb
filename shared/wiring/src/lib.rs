//! The one place that reads settings and wires adapters to services, for the Lambda
//! functions and the local server alike.
//!
//! - [`Settings`]: every setting, read once from the environment ([`env`] says how).
//! - [`services`]: the domain services from their ports and settings.
//! - [`aws::Aws`]: the AWS adapters; each SDK behind its own feature (`aws-s3`,
//!   `aws-dynamodb`, `aws-eventbridge`) so a function links only the clients it calls.
//! - [`stores::Stores`] (feature `local`): the local server's whole data plane, on the
//!   embedded store or on AWS (`WORKSPACE_BACKEND`).

pub mod aws;
pub mod env;
pub mod semantic;
pub mod services;
mod settings;
#[cfg(feature = "local")]
pub mod stores;

pub use settings::{AwsNames, Backend, ClaimNames, LocalSettings, Settings};
