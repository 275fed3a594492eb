//! The web console (`/console`): a client of the public API, served from the same origin so
//! it needs no CORS. Its assets are compiled in (`build.rs`); this module only answers them,
//! with the headers a browser needs to keep them inert and cached: a strict
//! Content-Security-Policy on every answer, `ETag`/304, and a year's cache for the assets,
//! whose folder is named by the build id (a hash of every asset), against none for the page.
//!
//! Served by the local server and, on AWS, by `fn-console` (no AWS SDK in it).

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use workspace_http::envelope::{error_response, HttpResponse};
use workspace_http::routes::Route;
use workspace_http::{Call, Reply, Routes};

/// One compiled-in file of `assets/`.
pub struct Asset {
    /// Its path under `assets/`.
    pub name: &'static str,
    pub bytes: &'static [u8],
    pub content_type: &'static str,
    /// A strong entity tag of its bytes.
    pub etag: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// Where the page is.
pub const PAGE: &str = "/console";

/// The policy on every console answer: nothing but this origin's own scripts, styles and
/// API; images also from `blob:` (previews of image files the console fetched itself); no
/// inline script or style, no eval, no frames, no plugins. `connect-src` also admits S3,
/// where a two-step upload's presigned URL points on AWS.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' blob:; connect-src 'self' https://*.amazonaws.com; \
     font-src 'self'; object-src 'none'; frame-src 'none'; frame-ancestors 'none'; \
     base-uri 'none'; form-action 'none'";

/// The console's rows of the route table, for `fn-console` and the local server.
pub const ROUTES: Routes = &[
    (Route::ConsolePage, console_page),
    (Route::ConsoleAsset, console_asset),
];

/// The asset named `name` (a path under `assets/`), if it exists.
pub fn asset(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.name == name)
}

/// The page itself (`index.html`).
pub fn page() -> &'static Asset {
    asset("index.html").expect("assets/index.html is compiled in")
}

/// Every asset the page loads before the person can act (all but the page itself and
/// what a screen loads on demand): what the bench measures as the first load.
pub fn first_load() -> impl Iterator<Item = &'static Asset> {
    ASSETS.iter().filter(|a| a.name != "index.html")
}

fn console_page(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move { Ok(answer(page(), c.parts, false)) })
}

fn console_asset(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move { Ok(answer_tail(c.tail, c.parts)) })
}

/// `GET /console/{path+}`: `assets/<build>/<name>` (cached for a year), `index.html`
/// (the page again), or a 404 in the API's envelope. An asset of another build is 404 too:
/// a page of an older build reloads and gets the current one.
pub fn answer_tail(tail: &str, parts: &http::request::Parts) -> HttpResponse {
    if tail == "index.html" {
        return answer(page(), parts, false);
    }
    let found = tail
        .strip_prefix("assets/")
        .and_then(|rest| rest.strip_prefix(BUILD))
        .and_then(|rest| rest.strip_prefix('/'))
        .filter(|name| *name != "index.html")
        .and_then(asset);
    match found {
        Some(a) => answer(a, parts, true),
        None => with_policy(error_response(
            StatusCode::NOT_FOUND,
            "not_found",
            &format!(
                "no console asset {}; open {PAGE} for the current console",
                tail.escape_debug()
            ),
            None,
        )),
    }
}

fn answer(a: &'static Asset, parts: &http::request::Parts, immutable: bool) -> HttpResponse {
    let fresh = parts
        .headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == a.etag || t == "*");
    let mut resp = if fresh {
        let mut r = Response::new(Bytes::new());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        let mut r = Response::new(Bytes::from_static(a.bytes));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(a.content_type),
        );
        r
    };
    let h = resp.headers_mut();
    h.insert(header::ETAG, HeaderValue::from_static(a.etag));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if immutable {
            "public, max-age=31536000, immutable"
        } else {
            "no-cache"
        }),
    );
    with_policy(resp)
}

/// The headers every console answer carries, errors included.
fn with_policy(mut resp: HttpResponse) -> HttpResponse {
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(path: &str, if_none_match: Option<&str>) -> HttpResponse {
        let mut b = http::Request::builder().uri(path);
        if let Some(t) = if_none_match {
            b = b.header(header::IF_NONE_MATCH, t);
        }
        let (parts, ()) = b.body(()).unwrap().into_parts();
        answer_tail(path.strip_prefix("/console/").unwrap(), &parts)
    }

    #[test]
    fn the_page_names_the_current_build_and_every_answer_carries_the_policy() {
        let page = std::str::from_utf8(page().bytes).unwrap();
        assert!(
            page.contains(&format!("/console/assets/{BUILD}/app.js")),
            "{page}"
        );
        assert!(!page.contains("{{BUILD}}"));
        for path in ["/console/index.html", "/console/assets/x/app.js"] {
            let r = get(path, None);
            assert_eq!(
                r.headers()[header::CONTENT_SECURITY_POLICY],
                CONTENT_SECURITY_POLICY,
                "{path}"
            );
        }
    }

    #[test]
    fn assets_of_this_build_are_immutable_and_answer_304_to_their_etag() {
        let path = format!("/console/assets/{BUILD}/app.js");
        let r = get(&path, None);
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.body().as_ref(), asset("app.js").unwrap().bytes);
        assert_eq!(
            r.headers()[header::CONTENT_TYPE],
            "text/javascript; charset=utf-8"
        );
        assert!(r.headers()[header::CACHE_CONTROL]
            .to_str()
            .unwrap()
            .contains("immutable"));
        let etag = r.headers()[header::ETAG].to_str().unwrap().to_owned();
        let again = get(&path, Some(&etag));
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        assert!(again.body().is_empty());
        let page = get("/console/index.html", None);
        assert_eq!(page.headers()[header::CACHE_CONTROL], "no-cache");
    }

    #[test]
    fn another_build_or_an_unknown_name_is_a_404_envelope() {
        for path in [
            "/console/assets/000000000000/app.js".to_owned(),
            format!("/console/assets/{BUILD}/nope.js"),
            format!("/console/assets/{BUILD}/../index.html"),
            "/console/app.js".to_owned(),
        ] {
            let r = get(&path, None);
            assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
            let v: serde_json::Value = serde_json::from_slice(r.body()).unwrap();
            assert_eq!(v["error"], "not_found", "{path}");
        }
    }
}
