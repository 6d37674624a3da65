//! The host's integration tests: one binary, one module per area. Each test starts the real
//! server on a free loopback port (`helpers::spawn_app`) against its own fresh database:
//! SQLite always, PostgreSQL too whenever `TESSERA_TEST_POSTGRES_URL` is set.
//! Logs are silent unless `TEST_LOG` is set.

mod components;
mod helpers;
mod smtp_sink;

mod activity;
mod audit;
mod auth;
mod auth_hardening;
mod backpressure;
mod backup;
mod chat;
mod chat_webhook_chunks;
mod cli;
mod cluster;
mod configuration;
mod console;
mod conventions;
mod data_dir;
mod dev_loop;
mod drive;
mod engines;
mod fairness;
mod families;
mod guests;
mod hardening_signatures;
mod health;
mod intentions;
mod mail;
mod members;
mod metrics;
mod notes;
mod openapi;
mod operator_tenants;
mod operators;
mod orchestration;
mod outbound;
mod passkeys;
mod polyglot;
mod projections;
mod rate_limit;
mod realtime;
mod realtime_cluster;
mod realtime_engines;
mod realtime_revocation;
mod sandbox_limits;
mod scaffold;
mod scans;
mod search;
mod shutdown;
mod sign_in_mail;
mod slow_clients;
pub mod soft_passkey;
mod storage;
mod test_kit;
mod traces;
mod unit_of_work;
mod usage;
mod user_removal;
mod usermanager;
mod voip;
mod warm_instances;
mod work;
mod workflow_limits;
mod workflows;
