//! Pushing a component as a Wasm OCI artifact, and pulling one back with every digest checked
//! and its size bounded before and while it is read.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::{Context, Poll};

use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::signature::{ComponentSignature, PublisherKey, SIGNATURE_ANNOTATION};
use crate::{ComponentReference, DistributionError, RegistryAccess};

/// The config media type of a Wasm OCI artifact.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The layer media type of a Wasm OCI artifact.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The layer media type Spin writes for a component.
pub const SPIN_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";

/// What [`push`] stored.
#[derive(Debug, Clone, Serialize)]
pub struct PushedComponent {
    /// The reference pushed to.
    pub reference: String,
    /// The manifest's digest: `oci://REGISTRY/REPOSITORY@<digest>` names exactly this push.
    pub digest: String,
    /// The component layer's digest (`sha256:` and the SHA-256 of the file).
    pub layer_digest: String,
    pub size_bytes: usize,
    /// Whether the manifest carries a signature.
    pub signed: bool,
}

/// What [`pull`] fetched.
#[derive(Debug)]
pub struct PulledComponent {
    pub component: Vec<u8>,
    /// The manifest's digest.
    pub digest: String,
    /// The signature its manifest carries, if any.
    pub signature: Option<ComponentSignature>,
}

/// The config of a Wasm OCI artifact.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WasmConfig {
    created: String,
    architecture: &'static str,
    os: &'static str,
    layer_digests: Vec<String>,
    component: ComponentWorld,
}

/// A component's top-level imports and exports.
#[derive(Serialize)]
struct ComponentWorld {
    exports: Vec<String>,
    imports: Vec<String>,
    target: Option<String>,
}

/// Pushes `component` to `reference` (which names a tag), signed with `signing_key` when given.
pub async fn push(
    access: &RegistryAccess,
    reference: &ComponentReference,
    component: Vec<u8>,
    signing_key: Option<&PublisherKey>,
) -> Result<PushedComponent, DistributionError> {
    if reference.digest().is_some() {
        return Err(DistributionError::BadReference(
            reference.to_string(),
            "a push names a tag; the registry gives the digest".to_owned(),
        ));
    }
    let world = component_world(&component).map_err(|reason| DistributionError::NotAComponent {
        reference: reference.to_string(),
        reason,
    })?;
    let layer_digest = sha256_digest(&component);
    let size_bytes = component.len();
    let config = WasmConfig {
        created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        architecture: "wasm",
        os: "wasip2",
        layer_digests: vec![layer_digest.clone()],
        component: world,
    };
    let config = Config {
        data: serde_json::to_vec(&config)
            .map_err(anyhow::Error::from)?
            .into(),
        media_type: WASM_CONFIG_MEDIA_TYPE.to_owned(),
        annotations: None,
    };
    let mut annotations = BTreeMap::new();
    if let Some(key) = signing_key {
        annotations.insert(
            SIGNATURE_ANNOTATION.to_owned(),
            key.sign(&component).to_base64(),
        );
    }
    let signed = signing_key.is_some();
    let layers = [ImageLayer::new(
        component,
        WASM_LAYER_MEDIA_TYPE.to_owned(),
        None,
    )];
    let manifest = OciImageManifest::build(&layers, &config, Some(annotations));
    let client = access.client()?;
    let auth = access.auth_for(reference.registry());
    let of_registry = |error| {
        DistributionError::of_registry(
            error,
            reference.registry(),
            reference.repository(),
            &reference.to_string(),
        )
    };
    client
        .push(&reference.reference, &layers, config, &auth, Some(manifest))
        .await
        .map_err(of_registry)?;
    let digest = client
        .fetch_manifest_digest(&reference.reference, &auth)
        .await
        .map_err(of_registry)?;
    tracing::info!(reference = %reference, %digest, signed, "component pushed");
    Ok(PushedComponent {
        reference: reference.to_string(),
        digest,
        layer_digest,
        size_bytes,
        signed,
    })
}

/// Pulls the component `reference` names: a manifest with exactly one WebAssembly layer of at
/// most `max_bytes`, its digest (and the manifest's, when the reference pins one) verified.
pub async fn pull(
    access: &RegistryAccess,
    reference: &ComponentReference,
    max_bytes: usize,
) -> Result<PulledComponent, DistributionError> {
    let client = access.client()?;
    let auth = access.auth_for(reference.registry());
    let named = reference.to_string();
    let of_registry = |error| {
        DistributionError::of_registry(error, reference.registry(), reference.repository(), &named)
    };
    let (manifest, digest) = client
        .pull_image_manifest(&reference.reference, &auth)
        .await
        .map_err(of_registry)?;
    let not_a_component = |reason: String| DistributionError::NotAComponent {
        reference: named.clone(),
        reason,
    };
    let layer = only_wasm_layer(&manifest).map_err(not_a_component)?;
    if usize::try_from(layer.size).map_or(true, |size| size > max_bytes) {
        return Err(DistributionError::TooLarge {
            reference: named.clone(),
            size: u64::try_from(layer.size).unwrap_or(0),
            limit: max_bytes,
        });
    }
    let mut buffer = BoundedBuffer::new(max_bytes);
    client
        .pull_blob(&reference.reference, layer, &mut buffer)
        .await
        .map_err(of_registry)?;
    let component = buffer.bytes;
    // The client checks the digest as it reads; checked here too, against the manifest's.
    let actual = sha256_digest(&component);
    if actual != layer.digest {
        return Err(DistributionError::DigestMismatch {
            reference: named,
            expected: layer.digest.clone(),
            actual,
        });
    }
    let signature = match manifest
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(SIGNATURE_ANNOTATION))
    {
        Some(text) => Some(
            ComponentSignature::from_bytes_or_base64(text.as_bytes()).map_err(|_| {
                DistributionError::MalformedSignature {
                    reference: named.clone(),
                    annotation: SIGNATURE_ANNOTATION,
                }
            })?,
        ),
        None => None,
    };
    tracing::info!(reference = %named, %digest, signed = signature.is_some(), "component pulled");
    Ok(PulledComponent {
        component,
        digest,
        signature,
    })
}

/// The manifest's one WebAssembly layer.
fn only_wasm_layer(manifest: &OciImageManifest) -> Result<&OciDescriptor, String> {
    match manifest.layers.as_slice() {
        [layer]
            if layer.media_type == WASM_LAYER_MEDIA_TYPE
                || layer.media_type == SPIN_LAYER_MEDIA_TYPE =>
        {
            Ok(layer)
        }
        [layer] => Err(format!(
            "its one layer is {:?}, not {WASM_LAYER_MEDIA_TYPE:?}",
            layer.media_type
        )),
        layers => Err(format!(
            "it has {} layers; a component artifact has one, {WASM_LAYER_MEDIA_TYPE:?}",
            layers.len()
        )),
    }
}

/// A component's top-level imports and exports, by name; an error when `bytes` is not a
/// component.
fn component_world(bytes: &[u8]) -> Result<ComponentWorld, String> {
    if !wasmparser::Parser::is_component(bytes) {
        return Err("the file is not a WebAssembly component".to_owned());
    }
    let mut world = ComponentWorld {
        exports: Vec::new(),
        imports: Vec::new(),
        target: None,
    };
    // Nested modules and components open with their own `Version` and close with `End`.
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload.map_err(|error| format!("the component does not parse: {error}"))? {
            wasmparser::Payload::Version { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::ComponentImportSection(imports) if depth == 1 => {
                for import in imports {
                    let import =
                        import.map_err(|error| format!("the component does not parse: {error}"))?;
                    world.imports.push(import.name.name.to_owned());
                }
            }
            wasmparser::Payload::ComponentExportSection(exports) if depth == 1 => {
                for export in exports {
                    let export =
                        export.map_err(|error| format!("the component does not parse: {error}"))?;
                    world.exports.push(export.name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    Ok(world)
}

fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// A buffer that refuses to grow past its limit: a registry that sends more than the
/// manifest said is cut off instead of filling memory.
struct BoundedBuffer {
    bytes: Vec<u8>,
    limit: usize,
}

impl BoundedBuffer {
    fn new(limit: usize) -> Self {
        Self {
            bytes: Vec::new(),
            limit,
        }
    }
}

impl tokio::io::AsyncWrite for BoundedBuffer {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.bytes.len() + data.len() > self.limit {
            return Poll::Ready(Err(std::io::Error::other(format!(
                "the registry sent more than {} bytes",
                self.limit
            ))));
        }
        self.bytes.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_module_is_not_a_component() {
        // The smallest core module: magic and version 1.
        let module = b"\0asm\x01\0\0\0";
        assert!(component_world(module).is_err());
        // The smallest component: magic, component version and layer.
        let component = b"\0asm\x0d\0\x01\0";
        let world = component_world(component).unwrap();
        assert!(world.imports.is_empty() && world.exports.is_empty());
    }
}
