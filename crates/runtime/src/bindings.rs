//! The one `bindgen!` of the host: Rust bindings of each engine world version the host serves.
//! WIT types stay inside `runtime`; the rest of the host sees plain Rust types.

/// `tessera:engine@0.1.0`. A later `v0_2` module sits beside this one, and the loader picks
/// the version a component was built against.
pub mod v0_1 {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "tessera:engine/engine@0.1.0",
        imports: { default: async | trappable },
        exports: { default: async },
    });
}
