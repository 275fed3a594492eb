//! The app a function's `main` builds, over the embedded store instead of AWS, so the
//! Lambda glue (events, identity, raw paths, bodies) is tested without the emulator. The
//! binaries themselves run on moto in `tests/tests/lambda_invoke.rs`.

use std::path::Path;
use std::sync::Arc;
use workspace_core::ports::MetaPorts;
use workspace_core::sessions::ports::RegistryOf;
use workspace_core::sessions::token::TokenKey;
use workspace_http::{serve, App};
use workspace_store_embedded::secrets::SecretFile;
use workspace_store_embedded::EmbeddedStore;
use workspace_wiring::{services, Settings};

/// `function`'s app over the embedded store in `dir` (which admits one opener at a time).
pub fn app(function: &str, dir: &Path) -> App {
    app_of(&[function], dir)
}

/// One app serving the routes of each of `functions`, over one embedded store.
pub fn app_of(functions: &[&str], dir: &Path) -> App {
    let settings = Settings::from_source(|_| None).expect("default settings");
    let store = Arc::new(EmbeddedStore::open(dir).expect("embedded store"));
    let secrets = Arc::new(SecretFile::new(dir));
    let files = services::files(
        &settings,
        MetaPorts::of(store.clone()),
        store.clone(),
        store.clone(),
        secrets.clone(),
    );
    let sessions = services::sessions(
        &settings,
        store.clone(),
        store.clone(),
        vec![store.clone()],
        TokenKey::random(),
    );
    workspace_lambda::app(&settings)
        .with_registry(Arc::new(RegistryOf(store.clone())))
        .with_files(files)
        .with_cache(services::cache(&settings, store.clone(), secrets))
        .with_blobs(services::blobs(&settings, store))
        .with_sessions(Arc::new(sessions))
        .serve_each(functions)
}

trait ServeEach {
    fn serve_each(self, functions: &[&str]) -> Self;
}

impl ServeEach for App {
    fn serve_each(self, functions: &[&str]) -> Self {
        functions.iter().fold(self, |app, f| {
            app.serve(serve::of_function(f).expect("an HTTP function"))
        })
    }
}
