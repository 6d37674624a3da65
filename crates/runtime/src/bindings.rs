//! The one `bindgen!` of the host: Rust bindings of each engine world version the host serves.
//! WIT types stay inside `runtime`; the rest of the host sees plain Rust types.
//!
//! `v0_3` is the current world; its import traits are what `imports.rs` implements. `v0_2`
//! and `v0_1` reuse 0.3's `types` (the records are the same), and their import traits
//! delegate to 0.3's (`world_v0_2.rs`, `world_v0_1.rs`), as Spin serves its older worlds.

/// `tessera:engine@0.3.0` (`wit/engine.wit`).
pub mod v0_3 {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "tessera:engine/engine@0.3.0",
        imports: { default: async | trappable },
        exports: { default: async },
    });
}

/// `tessera:engine@0.2.0` (`wit/v0.2/engine.wit`), frozen.
pub mod v0_2 {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.2",
        world: "tessera:engine/engine@0.2.0",
        imports: { default: async | trappable },
        exports: { default: async },
        with: {
            "tessera:engine/types@0.2.0": super::v0_3::tessera::engine::types,
        },
    });
}

/// `tessera:engine@0.1.0` (`wit/v0.1/engine.wit`), frozen.
pub mod v0_1 {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.1",
        world: "tessera:engine/engine@0.1.0",
        imports: { default: async | trappable },
        exports: { default: async },
        with: {
            "tessera:engine/types@0.1.0": super::v0_3::tessera::engine::types,
        },
    });
}

/// `wasi:keyvalue@0.2.0-draft` and `wasi:config@0.2.0-rc.1` (`wit/wasi-standard`, their WIT as
/// wasmtime ships it): what a `wasi:http` component engine imports beyond WASI 0.2 and
/// `wasi:http`, served by `wasi_keyvalue.rs` and `wasi_config.rs`.
pub mod wasi_standard {
    wasmtime::component::bindgen!({
        path: "../../wit/wasi-standard",
        world: "tessera:wasi-standard/standard",
        imports: { default: async | trappable },
        with: {
            "wasi:keyvalue/store.bucket": Bucket,
        },
    });

    /// An open `wasi:keyvalue` bucket (`wasi_keyvalue.rs`): its key prefix, and the positions
    /// its `list-keys` calls handed out (cursor `n` continues after `cursors[n - 1]`).
    pub struct Bucket {
        pub(crate) prefix: String,
        pub(crate) cursors: Vec<String>,
    }
}
