//! The generated WIT bindings of `tessera:engine/engine@0.3.0`: the `generate!` invocation and
//! nothing else. The SDK's wrappers reach the host imports through `imports.rs`, and the
//! exports through the `Adapter` of `guest.rs`.

/// The generated bindings. Not part of the API: use the SDK's modules instead.
#[doc(hidden)]
#[allow(missing_docs, clippy::all)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "tessera:engine/engine@0.3.0",
        pub_export_macro: true,
        export_macro_name: "__export_tessera_engine",
        default_bindings_module: "::tessera_sdk::__private::bindings",
    });
}
