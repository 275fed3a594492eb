//! The two-step upload for files over `maxFileBytes`: declare it (path, size, SHA-256,
//! content type), send the bytes to the URL the server answers (streamed, with a progress
//! bar on stderr), then commit it with a PUT naming the upload.

use crate::client::{network_error, Client};
use crate::error::{Error, Result};
use crate::route;
use crate::source::{Data, Source};
use crate::write::Precondition;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use reqwest::Method;
use serde_json::{json, Value};
use std::io::Cursor;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

const CHUNK: usize = 64 * 1024;

pub async fn upload(
    client: &Client,
    path: &str,
    source: &Source,
    content_type: Option<&str>,
    precondition: &Precondition,
    progress: bool,
    idempotency_key: Option<&str>,
) -> Result<Value> {
    let mut declaration = json!({"path": path, "size": source.size, "sha256": source.sha256});
    if let Some(ct) = content_type {
        declaration["contentType"] = json!(ct);
    }
    let what = format!("cannot upload {path}");
    let grant = client
        .json(
            client.api(Method::POST, route::UPLOADS).json(&declaration),
            &what,
        )
        .await?;
    let (Some(url), Some(upload_id)) = (grant["url"].as_str(), grant["uploadId"].as_str()) else {
        return Err(Error::new(
            crate::error::Kind::Server,
            what,
            "the upload answer has no url or uploadId",
        ));
    };
    send_bytes(client, &grant, url, source, content_type, progress, &what).await?;
    let mut commit = precondition.apply(client.api(Method::PUT, &route::file(path)));
    if let Some(key) = idempotency_key {
        commit = commit.header("Idempotency-Key", key);
    }
    client
        .json(
            commit.json(&json!({"uploadId": upload_id})),
            &format!("cannot write {path}"),
        )
        .await
}

/// PUTs the bytes to the signed URL with exactly the headers the grant lists (a presigned
/// S3 URL signs them), never the credential.
async fn send_bytes(
    client: &Client,
    grant: &Value,
    url: &str,
    source: &Source,
    content_type: Option<&str>,
    progress: bool,
    what: &str,
) -> Result<()> {
    let method = grant["method"]
        .as_str()
        .and_then(|m| Method::from_bytes(m.as_bytes()).ok())
        .unwrap_or(Method::PUT);
    let mut rb = client.public(method, url);
    let mut has_type = false;
    if let Some(headers) = grant["headers"].as_object() {
        for (name, value) in headers {
            if let Some(value) = value.as_str() {
                has_type |= name.eq_ignore_ascii_case("content-type");
                rb = rb.header(name, value);
            }
        }
    }
    if !has_type {
        rb = rb.header(
            "Content-Type",
            content_type.unwrap_or("application/octet-stream"),
        );
    }
    let bar = progress_bar(source.size, progress);
    let body = match &source.data {
        Data::Memory(bytes) => reqwest::Body::wrap(ProgressBody::new(
            Cursor::new(bytes.clone()),
            source.size,
            bar.clone(),
        )),
        Data::File(p) => {
            let file = tokio::fs::File::open(p)
                .await
                .map_err(|e| Error::bad_input(format!("cannot read {}", p.display()), e))?;
            reqwest::Body::wrap(ProgressBody::new(file, source.size, bar.clone()))
        }
    };
    let sent = rb.body(body).send().await;
    bar.finish_and_clear();
    let resp = sent.map_err(|e| network_error(e, what, url_host(url)))?;
    if !resp.status().is_success() {
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| text.trim().chars().take(300).collect());
        return Err(Error::new(
            crate::error::Kind::from_status(status),
            what,
            format!("the upload URL answered {status}: {message}"),
        ));
    }
    Ok(())
}

/// The scheme and host of a signed URL: enough to say where, without the signature.
fn url_host(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let end = url[after_scheme..]
        .find('/')
        .map_or(url.len(), |i| after_scheme + i);
    &url[..end]
}

fn progress_bar(size: u64, show: bool) -> ProgressBar {
    let target = if show {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(size), target);
    if let Ok(style) = ProgressStyle::with_template(
        "{bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
    ) {
        bar.set_style(style);
    }
    bar
}

/// A request body read from `reader` a chunk at a time, advancing the bar as it goes, with
/// its exact length declared (the signed URL takes only the declared size; no chunked
/// encoding).
struct ProgressBody<R> {
    reader: R,
    remaining: u64,
    buf: Vec<u8>,
    bar: ProgressBar,
}

impl<R> ProgressBody<R> {
    fn new(reader: R, size: u64, bar: ProgressBar) -> Self {
        ProgressBody {
            reader,
            remaining: size,
            buf: vec![0; CHUNK],
            bar,
        }
    }
}

impl<R: AsyncRead + Unpin> http_body::Body for ProgressBody<R> {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, std::io::Error>>> {
        let this = self.get_mut();
        if this.remaining == 0 {
            return Poll::Ready(None);
        }
        let want = this
            .buf
            .len()
            .min(usize::try_from(this.remaining).unwrap_or(usize::MAX));
        let mut read = ReadBuf::new(&mut this.buf[..want]);
        match Pin::new(&mut this.reader).poll_read(cx, &mut read) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
            Poll::Ready(Ok(())) => {
                let n = read.filled().len();
                if n == 0 {
                    return Poll::Ready(Some(Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the file got shorter while it was being sent",
                    ))));
                }
                let chunk = Bytes::copy_from_slice(read.filled());
                this.remaining -= n as u64;
                this.bar.inc(n as u64);
                Poll::Ready(Some(Ok(Frame::data(chunk))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_leave_the_signature_out() {
        assert_eq!(
            url_host("https://b.s3.amazonaws.com/k?X-Amz-Signature=s"),
            "https://b.s3.amazonaws.com"
        );
        assert_eq!(url_host("http://127.0.0.1:1"), "http://127.0.0.1:1");
    }
}
