//! Engine components to and from OCI registries, and their publisher signatures.
//!
//! A component travels as a [Wasm OCI artifact](https://tag-runtime.cncf.io/wgs/wasm/deliverables/wasm-oci-artifact/)
//! (what `wkg oci push` writes): an image manifest whose config has the media type
//! `application/vnd.wasm.config.v0+json` and whose one layer, `application/wasm`, is the
//! component's bytes. [`pull`] also takes Spin's layer media type
//! (`application/vnd.wasm.content.layer.v1+wasm`) when the artifact holds exactly one layer.
//! The manifest may carry the publisher's Ed25519 signature of the component
//! ([`signature::SIGNATURE_ANNOTATION`]).
//!
//! Nothing here loads or runs a component: the host checks what [`pull`] returns as it checks
//! a file (`tessera admin engine publish`), and decides whether a signature is required
//! ([`signature::TrustedKeys`]). No credential is logged or printed.

mod access;
mod artifact;
mod error;
mod reference;
pub mod signature;

pub use access::{RegistryAccess, RegistryCredentials};
pub use artifact::{PulledComponent, PushedComponent, pull, push};
pub use error::DistributionError;
pub use reference::ComponentReference;
