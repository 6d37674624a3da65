//! What the runtime's own routes (the engine catch-all, the engine list, the engines' signed
//! lifecycle endpoints) need from the app: the engine registry, the public URL and the engine
//! body limit. The app gives it by `FromRef`.

use std::sync::Arc;

use crate::registry::EngineRegistry;

/// The runtime routes' state; cheap to clone per request.
#[derive(Clone)]
pub struct RuntimeState {
    pub engines: Arc<EngineRegistry>,
    /// The host's public base URL, without a trailing slash (engine records name it).
    pub public_url: Arc<str>,
    /// The largest request body an engine route reads (`TESSERA_ENGINE_MAX_BODY_BYTES`).
    pub max_request_bytes: usize,
}
