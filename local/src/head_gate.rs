//! The request-head gate: every request head on a connection is read whole and checked
//! here before hyper sees a byte of it, so what hyper would refuse with a bare status (or,
//! for a `#`, accept wrongly) is refused in the error envelope instead.
//!
//! Written by hand because nothing maintained does it: hyper answers a malformed head with
//! an empty 400/431 and no hook to shape it, and `http::Uri` silently drops a fragment
//! (`PUT /files/report.md#draft` would write `report.md`). Parsing is httparse's (the parser
//! hyper itself uses); this file only keeps the HTTP/1 framing (where the next head
//! starts: after `Content-Length` bytes, or after the last chunk and its trailers) and, on
//! a bad head, hands hyper a stand-in request in its place, which the connection's service
//! answers with the refusal (`Refusals::take`). Hyper so writes the refusal in order, after
//! any answer still owed on the connection, and closes.
//!
//! Bound: a head may hold at most `MAX_HEAD_BYTES` and `MAX_HEADERS` fields (431 past
//! either), so a connection holds at most that much here; bodies pass straight through.

use bytes::{Buf, BytesMut};
use http::StatusCode;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The largest request head (request line and header fields) taken.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The most header fields one request may carry.
pub const MAX_HEADERS: usize = 128;

/// What hyper reads in place of a refused head: a request it cannot refuse, answered by
/// the service from `Refusals` (its path is never routed).
const STAND_IN: &[u8] = b"GET / HTTP/1.1\r\nconnection: close\r\n\r\n";

/// A head refused by the gate: its status and the envelope's code and message.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl Refusal {
    fn bad(message: impl Into<String>) -> Refusal {
        Refusal {
            status: StatusCode::BAD_REQUEST,
            code: "validation_error",
            message: message.into(),
        }
    }

    fn too_large() -> Refusal {
        Refusal {
            status: StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            code: "headers_too_large",
            message: format!(
                "the request head is over {} KiB or {MAX_HEADERS} header fields",
                MAX_HEAD_BYTES / 1024
            ),
        }
    }
}

/// Shared by a connection's gate and its service: which request (counted from 0 in the
/// order hyper parses them) is the stand-in for a refused head.
#[derive(Default)]
pub struct Refusals {
    state: Mutex<RefusalState>,
}

#[derive(Default)]
struct RefusalState {
    /// Heads handed to hyper so far.
    handed: u64,
    /// Requests the service has been called for so far.
    served: u64,
    refused: Option<(u64, Refusal)>,
}

impl Refusals {
    /// Called once per request by the service, in order: the refusal if this request is
    /// the stand-in for a refused head.
    pub fn take(&self) -> Option<Refusal> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let n = s.served;
        s.served += 1;
        match s.refused.take() {
            Some((at, r)) if at == n => Some(r),
            other => {
                s.refused = other;
                None
            }
        }
    }

    fn handed(&self, refusal: Option<Refusal>) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let n = s.handed;
        s.handed += 1;
        if let Some(r) = refusal {
            s.refused = Some((n, r));
        }
    }
}

/// Where the byte stream is, between heads.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Framing {
    /// Reading a request head (held here until it is whole).
    Head,
    /// This many body bytes are still to pass.
    Body(u64),
    /// A chunk-size line is next.
    ChunkSize,
    /// This many bytes of chunk data and its closing CRLF are still to pass.
    ChunkData(u64),
    /// Trailer fields after the last chunk, up to an empty line.
    Trailers,
    /// Framing the gate does not follow (a malformed chunk, an upgrade): everything passes,
    /// and hyper, which fails such a body, closes the connection after it.
    Through,
    /// The stand-in has been handed over: nothing more is read.
    Closed,
}

pub struct Gate<S> {
    inner: S,
    refusals: Arc<Refusals>,
    /// Bytes read from the socket not yet handed to hyper; the first `ready` of them are
    /// cleared to go.
    pending: BytesMut,
    ready: usize,
    framing: Framing,
    eof: bool,
}

impl<S> Gate<S> {
    pub fn new(inner: S, refusals: Arc<Refusals>) -> Gate<S> {
        Gate {
            inner,
            refusals,
            pending: BytesMut::new(),
            ready: 0,
            framing: Framing::Head,
            eof: false,
        }
    }

    /// Clears what it can of `pending[ready..]`; false when it needs more bytes.
    fn advance(&mut self) -> bool {
        let rest = &self.pending[self.ready..];
        match self.framing {
            Framing::Closed => true,
            Framing::Through => {
                self.ready = self.pending.len();
                !rest.is_empty()
            }
            Framing::Body(0) | Framing::ChunkData(0) => {
                self.framing = if self.framing == Framing::Body(0) {
                    Framing::Head
                } else {
                    Framing::ChunkSize
                };
                true
            }
            Framing::Body(n) | Framing::ChunkData(n) => {
                let take = (rest.len() as u64).min(n);
                if take == 0 {
                    return false;
                }
                self.ready += take as usize;
                self.framing = match self.framing {
                    Framing::Body(_) => Framing::Body(n - take),
                    _ => Framing::ChunkData(n - take),
                };
                true
            }
            Framing::ChunkSize => match httparse::parse_chunk_size(rest) {
                Ok(httparse::Status::Complete((used, size))) => {
                    self.ready += used;
                    self.framing = if size == 0 {
                        Framing::Trailers
                    } else {
                        // The data, then its CRLF.
                        Framing::ChunkData(size.saturating_add(2))
                    };
                    true
                }
                Ok(httparse::Status::Partial) if rest.len() < MAX_HEAD_BYTES => false,
                _ => {
                    self.framing = Framing::Through;
                    true
                }
            },
            Framing::Trailers => match rest.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    let blank = rest[..end].iter().all(|&b| b == b'\r');
                    self.ready += end + 1;
                    if blank {
                        self.framing = Framing::Head;
                    }
                    true
                }
                None if rest.len() < MAX_HEAD_BYTES => false,
                None => {
                    self.framing = Framing::Through;
                    true
                }
            },
            Framing::Head => self.check_head(),
        }
    }

    /// A whole head at `pending[ready..]`: cleared with the framing of its body, or
    /// replaced by the stand-in.
    fn check_head(&mut self) -> bool {
        let rest = &self.pending[self.ready..];
        // Blank lines before a request are allowed (RFC 9112 §2.2) and passed on.
        let blank = rest
            .iter()
            .take_while(|b| matches!(b, b'\r' | b'\n'))
            .count();
        if blank > 0 {
            self.ready += blank;
            return true;
        }
        if rest.is_empty() {
            return false;
        }
        let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut fields);
        let verdict = match req.parse(rest) {
            Ok(httparse::Status::Complete(len)) => match judge(&req) {
                Ok(framing) => Ok((len, framing)),
                Err(refusal) => Err(refusal),
            },
            Ok(httparse::Status::Partial) if rest.len() <= MAX_HEAD_BYTES => return false,
            Ok(httparse::Status::Partial) | Err(httparse::Error::TooManyHeaders) => {
                Err(Refusal::too_large())
            }
            Err(e) => Err(Refusal::bad(format!(
                "the request line or a header field is malformed ({e})"
            ))),
        };
        match verdict {
            Ok((len, _)) if len > MAX_HEAD_BYTES => self.refuse(Refusal::too_large()),
            Ok((len, framing)) => {
                self.refusals.handed(None);
                self.ready += len;
                self.framing = framing;
            }
            Err(refusal) => self.refuse(refusal),
        }
        true
    }

    /// Drops everything not yet handed over and hands the stand-in instead.
    fn refuse(&mut self, refusal: Refusal) {
        self.refusals.handed(Some(refusal));
        self.pending.truncate(self.ready);
        self.pending.extend_from_slice(STAND_IN);
        self.ready = self.pending.len();
        self.framing = Framing::Closed;
    }
}

/// What a parsed head's target and framing fields allow: the framing of its body, or why
/// it is refused.
fn judge(req: &httparse::Request) -> Result<Framing, Refusal> {
    let target = req.path.unwrap_or("");
    if target.contains('#') {
        return Err(Refusal::bad(
            "the request target carries a fragment ('#'); percent-encode it as %23 if it is part of the path",
        ));
    }
    if http::Uri::try_from(target).is_err() {
        return Err(Refusal::bad(format!(
            "the request target is not a valid URI path: {}",
            target.escape_debug()
        )));
    }
    if req.method == Some("CONNECT") {
        return Ok(Framing::Through);
    }
    let mut length: Option<u64> = None;
    let mut chunked = None;
    for field in req.headers.iter() {
        if field.name.eq_ignore_ascii_case("content-length") {
            let n = std::str::from_utf8(field.value)
                .ok()
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| Refusal::bad("Content-Length is not a whole number of bytes"))?;
            if length.is_some_and(|l| l != n) {
                return Err(Refusal::bad("Content-Length is given twice, differently"));
            }
            length = Some(n);
        } else if field.name.eq_ignore_ascii_case("transfer-encoding") {
            let last = field.value.rsplit(|&b| b == b',').next().unwrap_or(b"");
            chunked = Some(last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if field.name.eq_ignore_ascii_case("upgrade") {
            return Ok(Framing::Through);
        }
    }
    match (chunked, length) {
        (Some(true), None) => Ok(Framing::ChunkSize),
        (Some(true), Some(_)) => Err(Refusal::bad(
            "Content-Length and Transfer-Encoding: chunked together; send one",
        )),
        (Some(false), _) => Err(Refusal::bad(
            "Transfer-Encoding must end in chunked on a request",
        )),
        (None, n) => Ok(Framing::Body(n.unwrap_or(0))),
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Gate<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.ready > 0 {
                let n = this.ready.min(buf.remaining());
                buf.put_slice(&this.pending[..n]);
                this.pending.advance(n);
                this.ready -= n;
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            // After the stand-in, no end-of-stream either: hyper takes a client's EOF as
            // leaving and would drop the refusal; it closes after answering the stand-in.
            if this.framing == Framing::Closed {
                return Poll::Pending;
            }
            // A body with nothing held and room for no more than its rest: straight from
            // the socket into hyper's buffer, without a copy here.
            if let Framing::Body(n @ 1..) = this.framing {
                if this.pending.is_empty() && buf.remaining() as u64 <= n {
                    let before = buf.filled().len();
                    ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
                    let got = buf.filled().len() - before;
                    if got == 0 {
                        this.eof = true;
                    }
                    this.framing = Framing::Body(n - got as u64);
                    return Poll::Ready(Ok(()));
                }
            }
            if this.advance() {
                continue;
            }
            // More bytes are needed to decide.
            let mut chunk = [0u8; 8192];
            let mut read = ReadBuf::new(&mut chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                this.eof = true;
                // What is held is an unfinished head or chunk line: the client left.
                this.pending.clear();
                continue;
            }
            this.pending.extend_from_slice(read.filled());
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Gate<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
