//! The imports of the older worlds, `tessera:engine@0.1.0` and `@0.2.0`, served by delegating
//! to 0.3's (`imports.rs`, `blobs.rs`, `mail_transport.rs`): their imports are the same
//! functions (0.3 adds `realtime`); only the records of a few interfaces are distinct Rust
//! types, converted here. Their `types` are 0.3's (`bindings.rs`).

/// The delegation of one older world's imports to 0.3's.
macro_rules! delegate_to_current_world {
    ($version:ident) => {
        mod $version {
            use crate::bindings::{v0_3::tessera::engine as new, $version::tessera::engine as old};
            use crate::imports::StoreState;

            type Outcome<T> = wasmtime::Result<Result<T, String>>;

            impl old::storage::Host for StoreState {
                async fn get(&mut self, key: String) -> Outcome<Option<Vec<u8>>> {
                    new::storage::Host::get(self, key).await
                }

                async fn get_many(&mut self, keys: Vec<String>) -> Outcome<Vec<Option<Vec<u8>>>> {
                    new::storage::Host::get_many(self, keys).await
                }

                async fn set(&mut self, key: String, value: Vec<u8>) -> Outcome<()> {
                    new::storage::Host::set(self, key, value).await
                }

                async fn delete(&mut self, key: String) -> Outcome<bool> {
                    new::storage::Host::delete(self, key).await
                }

                async fn scan(
                    &mut self,
                    prefix: String,
                    after: Option<String>,
                    limit: u32,
                    reverse: bool,
                ) -> Outcome<Vec<(String, Vec<u8>)>> {
                    new::storage::Host::scan(self, prefix, after, limit, reverse).await
                }

                async fn delete_prefix(&mut self, prefix: String) -> Outcome<u64> {
                    new::storage::Host::delete_prefix(self, prefix).await
                }

                async fn compare_and_swap(
                    &mut self,
                    key: String,
                    expected: Option<Vec<u8>>,
                    value: Option<Vec<u8>>,
                ) -> Outcome<bool> {
                    new::storage::Host::compare_and_swap(self, key, expected, value).await
                }

                async fn write_batch(
                    &mut self,
                    sets: Vec<(String, Vec<u8>)>,
                    deletes: Vec<String>,
                    jobs: Vec<(u64, Vec<u8>)>,
                ) -> Outcome<Vec<String>> {
                    new::storage::Host::write_batch(self, sets, deletes, jobs).await
                }

                async fn transact(
                    &mut self,
                    transaction: old::storage::Transaction,
                ) -> Outcome<Option<Vec<String>>> {
                    let old::storage::Transaction {
                        expect,
                        sets,
                        deletes,
                        add,
                        jobs,
                    } = transaction;
                    let transaction = new::storage::Transaction {
                        expect,
                        sets,
                        deletes,
                        add,
                        jobs,
                    };
                    new::storage::Host::transact(self, transaction).await
                }
            }

            impl old::blobs::Host for StoreState {
                async fn put(
                    &mut self,
                    key: String,
                    content: Vec<u8>,
                    quota_bytes: Option<u64>,
                    sets: Vec<(String, Vec<u8>)>,
                ) -> Outcome<bool> {
                    new::blobs::Host::put(self, key, content, quota_bytes, sets).await
                }

                async fn get(&mut self, key: String) -> Outcome<Option<Vec<u8>>> {
                    new::blobs::Host::get(self, key).await
                }

                async fn delete(
                    &mut self,
                    keys: Vec<String>,
                    deletes: Vec<String>,
                ) -> Outcome<u64> {
                    new::blobs::Host::delete(self, keys, deletes).await
                }

                async fn delete_prefix(&mut self, prefix: String) -> Outcome<u64> {
                    new::blobs::Host::delete_prefix(self, prefix).await
                }

                async fn usage(&mut self) -> Outcome<u64> {
                    new::blobs::Host::usage(self).await
                }
            }

            impl old::scheduler::Host for StoreState {
                async fn schedule(&mut self, at_unix_ms: u64, payload: Vec<u8>) -> Outcome<String> {
                    new::scheduler::Host::schedule(self, at_unix_ms, payload).await
                }

                async fn cancel(&mut self, job_id: String) -> Outcome<bool> {
                    new::scheduler::Host::cancel(self, job_id).await
                }
            }

            impl old::events::Host for StoreState {
                async fn publish(&mut self, event_type: String, payload: String) -> Outcome<()> {
                    new::events::Host::publish(self, event_type, payload).await
                }
            }

            impl old::outbound_http::Host for StoreState {
                async fn fetch(
                    &mut self,
                    request: old::outbound_http::OutboundRequest,
                ) -> Outcome<old::outbound_http::OutboundResponse> {
                    let old::outbound_http::OutboundRequest {
                        method,
                        url,
                        headers,
                        body,
                        timeout_ms,
                    } = request;
                    let request = new::outbound_http::OutboundRequest {
                        method,
                        url,
                        headers,
                        body,
                        timeout_ms,
                    };
                    Ok(new::outbound_http::Host::fetch(self, request)
                        .await?
                        .map(|response| {
                            let new::outbound_http::OutboundResponse {
                                status,
                                headers,
                                body,
                                elapsed_ms,
                            } = response;
                            old::outbound_http::OutboundResponse {
                                status,
                                headers,
                                body,
                                elapsed_ms,
                            }
                        }))
                }

                async fn check_target(&mut self, url: String) -> Outcome<()> {
                    new::outbound_http::Host::check_target(self, url).await
                }
            }

            impl old::vault::Host for StoreState {
                async fn seal(&mut self, plaintext: Vec<u8>) -> Outcome<Vec<u8>> {
                    new::vault::Host::seal(self, plaintext).await
                }

                async fn open(&mut self, sealed: Vec<u8>) -> Outcome<Vec<u8>> {
                    new::vault::Host::open(self, sealed).await
                }
            }

            /// 0.1 engines declare no settings: they read the host's own (`webhook.retry-schedule-ms`,
            /// `storage.scan-*`, …), as 0.2 engines do.
            impl old::settings::Host for StoreState {
                async fn get(&mut self, name: String) -> wasmtime::Result<Option<String>> {
                    new::settings::Host::get(self, name).await
                }
            }

            impl old::mail_transport::Host for StoreState {
                async fn send(&mut self, mail: old::mail_transport::OutgoingMail) -> Outcome<()> {
                    let old::mail_transport::OutgoingMail {
                        sender,
                        recipients,
                        subject,
                        text,
                        message_id,
                    } = mail;
                    let mail = new::mail_transport::OutgoingMail {
                        sender,
                        recipients,
                        subject,
                        text,
                        message_id,
                    };
                    new::mail_transport::Host::send(self, mail).await
                }
            }

            impl old::log::Host for StoreState {
                async fn log(
                    &mut self,
                    level: old::log::Level,
                    message: String,
                ) -> wasmtime::Result<()> {
                    let level = match level {
                        old::log::Level::Trace => new::log::Level::Trace,
                        old::log::Level::Debug => new::log::Level::Debug,
                        old::log::Level::Info => new::log::Level::Info,
                        old::log::Level::Warn => new::log::Level::Warn,
                        old::log::Level::Error => new::log::Level::Error,
                    };
                    new::log::Host::log(self, level, message).await
                }
            }
        }
    };
}

delegate_to_current_world!(v0_1);
delegate_to_current_world!(v0_2);
