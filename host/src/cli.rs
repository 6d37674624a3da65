//! The `tessera` command line: `serve` and the `admin` commands of CONTRACT §3. Admin
//! commands print one JSON object on stdout and exit 0, or a message on stderr and exit 1.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use serde::Serialize;
use serde_json::Value;

use crate::auth::password::PasswordHasher;
use crate::config::{Config, ServeArgs, StorageArgs};
use crate::orchestrator::Orchestrator;
use crate::runtime::RegistryRole;
use crate::server::{Application, shutdown_signal};
use crate::settings::SettingFlags;
use crate::storage::Database;
use crate::tenancy::{NewUser, Role, TenancyService, UserType};

#[derive(Debug, Parser)]
#[command(
    name = "tessera",
    version,
    about = "The Tessera workspace platform host"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve /auth, /core and every engine on one listener. Every setting is a flag, an
    /// environment variable and a key of the --config file (flag, else environment, else file,
    /// else default; docs/src/operating/configuration.md).
    Serve(ServeCommand),
    /// Administer tenants, users, engines, signing keys and backups (works while a server
    /// runs).
    Admin(AdminArgs),
}

/// `tessera serve`'s command line.
#[derive(Debug, Args)]
pub struct ServeCommand {
    /// A TOML file of settings (keys: the variables' names without `TESSERA_`, lower-case, or
    /// in tables: `[rate_limit]` `auth = 60`); below flags and the environment.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub settings: SettingFlags,
}

/// Where the admin commands find the data, as `serve` does.
#[derive(Debug, Clone, Args)]
pub struct AdminStorageFlags {
    /// A TOML file of settings, as `serve --config` reads (for the data dir, database, plugins,
    /// service secret and password policy).
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// Folder for the SQLite file, blobs and generated keys [env: TESSERA_DATA_DIR]
    /// [default: ./data].
    #[arg(long, global = true)]
    pub data_dir: Option<PathBuf>,
    /// `sqlite://…` (default `sqlite://<data-dir>/tessera.db`) or `postgres://…`
    /// [env: TESSERA_DATABASE_URL].
    #[arg(long, global = true)]
    pub database_url: Option<String>,
    /// Folder of engine components (`*.wasm`) [env: TESSERA_PLUGINS_DIR] [default: ./plugins].
    #[arg(long, global = true)]
    pub plugins_dir: Option<PathBuf>,
}

impl AdminStorageFlags {
    /// The flags given, by variable name.
    fn given(&self) -> std::collections::BTreeMap<String, String> {
        let mut given = std::collections::BTreeMap::new();
        if let Some(data_dir) = &self.data_dir {
            given.insert(
                "TESSERA_DATA_DIR".to_owned(),
                data_dir.display().to_string(),
            );
        }
        if let Some(url) = &self.database_url {
            given.insert("TESSERA_DATABASE_URL".to_owned(), url.clone());
        }
        if let Some(plugins_dir) = &self.plugins_dir {
            given.insert(
                "TESSERA_PLUGINS_DIR".to_owned(),
                plugins_dir.display().to_string(),
            );
        }
        given
    }
}

#[derive(Debug, Args)]
pub struct AdminArgs {
    #[command(flatten)]
    pub storage: AdminStorageFlags,
    /// `json`: one JSON object or array on one line (for scripts); `table`: aligned columns
    /// for people.
    #[arg(long, value_enum, default_value = "json", global = true)]
    pub format: OutputFormat,
    #[command(subcommand)]
    pub command: AdminCommand,
}

/// `--format` of the admin commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Json,
    Table,
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    #[command(flatten)]
    Tenancy(TenancyCommand),
    /// Empty every read model (timeline, inbox, search index) and replay the event log into
    /// it. Safe while servers run; the workflow worker is not replayed.
    RebuildProjections,
    /// Write a consistent copy of the embedded (SQLite) database and the service secret to one
    /// archive (mode 0600) while servers run. PostgreSQL: use pg_dump (docs/src/operating/backup.md).
    Backup {
        /// The archive to create (never overwritten).
        #[arg(long)]
        to: PathBuf,
    },
    /// Unpack a backup into `--data-dir`, which must hold no database or service secret yet;
    /// everything is checked before anything is written.
    Restore {
        /// The archive `admin backup` wrote.
        #[arg(long)]
        from: PathBuf,
    },
    /// Engines published to the cluster: every host runs each code's active version (it wins
    /// over a plugins-dir file of the same code).
    #[command(subcommand)]
    Engine(EngineCommand),
    /// The hosts of the cluster sharing this database: live (heartbeating), stopped, or gone
    /// (no heartbeat within TESSERA_CLUSTER_HOST_TIMEOUT), each with its listen address and the
    /// engines it runs.
    Hosts,
    /// Print the operator token, the bearer credential of the operator endpoints
    /// (`/core/api/operator/…`): derived from the service secret, so it changes only with it.
    /// Keep it as secret as the service secret.
    OperatorToken,
    /// Make a new token signing key; servers sign with it within TESSERA_SIGNING_KEYS_REFRESH
    /// (30 s). Tokens signed before stay valid until they expire, unless --revoke-previous.
    RotateKeys {
        /// Also stop every older key verifying (after a leak): their tokens are refused once
        /// servers reread the keys, and their users sign in again (refresh tokens still work).
        #[arg(long)]
        revoke_previous: bool,
    },
}

/// `tessera admin engine …`: the engines published to the cluster (CONTRACT §8).
#[derive(Debug, Subcommand)]
pub enum EngineCommand {
    /// Check a component as a host would load it and store it as the next version of the code
    /// it describes (the same bytes again: their existing version); active at once unless
    /// --inactive, and every host swaps it in within seconds.
    ///
    /// The component is a `.wasm` file or `oci://REGISTRY/REPOSITORY:TAG` (or
    /// `@sha256:DIGEST`): a Wasm OCI artifact, pulled with every digest verified.
    Publish {
        /// The component: a `.wasm` file, or an `oci://` reference.
        source: String,
        /// Store it without activating it (`engine activate` later).
        #[arg(long)]
        inactive: bool,
        /// The publisher's detached Ed25519 signature of a file (64 bytes, raw or base64), for
        /// TESSERA_ENGINE_TRUSTED_KEYS; an `oci://` component carries its own.
        #[arg(long)]
        signature: Option<PathBuf>,
        /// The manifest of a `wasi:http` component (its code, public paths, outbound hosts and
        /// settings, as beside it in a plugins dir); published with it, it is part of the
        /// version. Required for a `wasi:http` component.
        #[arg(long)]
        manifest: Option<PathBuf>,
        #[command(flatten)]
        registry: RegistryArguments,
    },
    /// Push a component to an OCI registry as a Wasm OCI artifact (`application/wasm` layer),
    /// signed with --signing-key when given; prints the digest that names exactly this push.
    Push {
        /// The component (`.wasm`).
        file: PathBuf,
        /// Where to: `oci://REGISTRY/REPOSITORY:TAG`.
        reference: String,
        /// An Ed25519 private key (PKCS#8 PEM, `openssl genpkey -algorithm ed25519`) to sign
        /// the component with.
        #[arg(long)]
        signing_key: Option<PathBuf>,
        #[command(flatten)]
        registry: RegistryArguments,
    },
    /// Every published code with its active and previous version.
    List,
    /// Every published version of a code, newest first.
    Versions { code: String },
    /// Make a published version the code's active one.
    Activate { code: String, version: i64 },
    /// Leave a code without an active version: hosts unload it (or load their plugins dir's
    /// file of it).
    Deactivate { code: String },
    /// Make the previous version active again (twice: forward again).
    Rollback { code: String },
}

/// How `engine push` and `engine publish oci://…` reach a registry. Without a user name, the
/// standard Docker config's credentials for the registry (`docker login`), else none.
#[derive(Debug, clap::Args)]
pub struct RegistryArguments {
    /// The registry user name.
    #[arg(long)]
    username: Option<String>,
    /// Read the registry password (or token) from standard input (never from the command
    /// line, where other users of the machine could read it).
    #[arg(long, requires = "username")]
    password_stdin: bool,
    /// Trust the certificate authorities of this PEM file too (a private registry's).
    #[arg(long)]
    ca_file: Option<PathBuf>,
    /// Speak plain HTTP to the registry (only on a network you trust).
    #[arg(long)]
    plain_http: bool,
}

impl RegistryArguments {
    /// The access these arguments give; the password from standard input.
    fn access(self) -> anyhow::Result<crate::distribution::RegistryAccess> {
        use crate::distribution::{RegistryAccess, RegistryCredentials};
        let credentials = match self.username {
            None => RegistryCredentials::FromDockerConfig,
            Some(_) if !self.password_stdin => {
                anyhow::bail!("--username needs --password-stdin (the password on standard input)")
            }
            Some(username) => {
                let mut password = String::new();
                std::io::stdin()
                    .read_line(&mut password)
                    .context("reading the registry password from standard input")?;
                let password = password.trim_end_matches(['\r', '\n']).to_owned();
                RegistryCredentials::Given { username, password }
            }
        };
        Ok(RegistryAccess {
            credentials,
            extra_ca_file: self.ca_file,
            plain_http: self.plain_http,
        })
    }
}

/// The admin commands that manage tenants, users and workspaces (and so load the engines to
/// provision them).
#[derive(Debug, Subcommand)]
pub enum TenancyCommand {
    /// Create a tenant with its default workspace and families, provisioned on every engine.
    CreateTenant {
        #[arg(long)]
        slug: String,
        #[arg(long)]
        name: String,
    },
    /// Create a user as a member of a tenant.
    CreateUser {
        /// The tenant's slug.
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        email: String,
        #[arg(long)]
        password: String,
        #[arg(long, value_enum, default_value = "editor")]
        role: RoleArg,
        #[arg(long = "type", value_enum, default_value = "user")]
        user_type: UserTypeArg,
        #[arg(long, default_value = "")]
        first_name: String,
        #[arg(long, default_value = "")]
        last_name: String,
    },
    /// Make an existing user a member of another tenant.
    AddMember {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        email: String,
        #[arg(long, value_enum, default_value = "editor")]
        role: RoleArg,
    },
    /// Add a workspace to a tenant.
    CreateWorkspace {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        name: String,
    },
    /// List every tenant with its member count.
    ListTenants,
    /// Show a tenant: its counts and its provisioning on each engine.
    ShowTenant {
        /// The tenant's slug.
        #[arg(long)]
        tenant: String,
    },
    /// Show a user: tenants and roles, disabled or not, second factor, open sessions.
    ShowUser {
        #[arg(long)]
        email: String,
    },
    /// List a tenant's members with their roles.
    ListUsers {
        /// The tenant's slug.
        #[arg(long)]
        tenant: String,
    },
    /// Change a member's role (a tenant keeps at least one owner).
    SetRole {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        email: String,
        #[arg(long, value_enum)]
        role: RoleArg,
    },
    /// Replace a member's password, read from standard input (never from the command line),
    /// and revoke their sessions.
    ResetPassword {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        email: String,
    },
    /// Stop a user signing in anywhere: sessions revoked, tokens refused within seconds.
    DisableUser {
        #[arg(long)]
        email: String,
    },
    /// Let a disabled user sign in again.
    EnableUser {
        #[arg(long)]
        email: String,
    },
    /// Delete a user: their data on the engines that provision users, then the account with
    /// its memberships, sessions and second factors. What they created stays with the tenants.
    DeleteUser {
        #[arg(long)]
        email: String,
    },
    /// Stop a tenant's members using it: no token for it, the ones issued refused within
    /// seconds. Its data stays.
    DisableTenant {
        /// The tenant's slug.
        #[arg(long)]
        tenant: String,
    },
    /// Let a disabled tenant's members in again.
    EnableTenant {
        /// The tenant's slug.
        #[arg(long)]
        tenant: String,
    },
    /// Delete a tenant and everything it holds, on every engine too. Irreversible: take a
    /// backup first. Members' accounts stay.
    DeleteTenant {
        /// The tenant's slug.
        #[arg(long)]
        tenant: String,
    },
    /// List the loaded engines with each tenant's provisioning state on them.
    ListEngines,
    /// Run a tenant's provisioning again on the engines that failed it or never ran it.
    RetryProvisioning {
        /// The tenant's slug.
        #[arg(long)]
        tenant: String,
    },
}

/// Parses the command line and runs it.
pub fn main() -> ExitCode {
    // Everything the host creates (database, WAL, caches, lock files) is private to its user.
    crate::secrets::restrict_umask();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        Command::Serve(command) => {
            // The settings' sources first: the log filter is one of them.
            let args = crate::settings::install(command.settings.given, command.config.as_deref())
                .and_then(|()| ServeArgs::from_settings());
            let telemetry = crate::telemetry::init_serving("info", runtime.handle().clone());
            let served = match args {
                Ok(args) => runtime.block_on(serve(args)),
                Err(error) => Err(error),
            };
            let code = match served {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    tracing::error!(
                        error = format!("{error:#}"),
                        "tessera stopped with an error"
                    );
                    eprintln!("error: {error:#}");
                    ExitCode::FAILURE
                }
            };
            // The last spans go out while the runtime still runs their requests, and the last
            // log lines are written.
            telemetry.shutdown();
            // Past the shutdown deadline, tasks still running are dropped, not waited for.
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
            code
        }
        Command::Admin(args) => {
            if let Err(error) =
                crate::settings::install(args.storage.given(), args.storage.config.as_deref())
            {
                eprintln!("error: {error:#}");
                return ExitCode::FAILURE;
            }
            crate::telemetry::init("warn");
            let format = args.format;
            match runtime.block_on(admin(args)) {
                Ok(output) => {
                    match format {
                        OutputFormat::Json => println!("{output}"),
                        OutputFormat::Table => print!("{}", crate::table::render(&output)),
                    }
                    ExitCode::SUCCESS
                }
                Err(error) => {
                    eprintln!("error: {error:#}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let config = Config::from_serve_args(args)?;
    let application = Application::build(config).await?;
    application.run_until(shutdown_signal()).await
}

/// Runs one admin command; returns what to print.
pub async fn admin(args: AdminArgs) -> anyhow::Result<Value> {
    let config = Config::from_serve_args(ServeArgs {
        storage: StorageArgs::from_settings()?,
        listen: ([127, 0, 0, 1], 8080).into(),
        public_url: None,
        max_body_bytes: 1024 * 1024,
    })?;
    let command = match args.command {
        // Backups and restores handle files; they must not create or migrate a database.
        AdminCommand::Backup { to } => return json(crate::backup::backup(&config, &to).await?),
        AdminCommand::Restore { from } => {
            return json(crate::backup::restore(&config, &from).await?);
        }
        AdminCommand::RebuildProjections => {
            let database = Database::connect_and_migrate(&config.database).await?;
            let rebuilt =
                crate::core::projections::rebuild(&database, config.projections.batch_size).await;
            database.close().await;
            return Ok(serde_json::json!({ "rebuilt": rebuilt? }));
        }
        AdminCommand::RotateKeys { revoke_previous } => {
            let database = Database::connect_and_migrate(&config.database).await?;
            let rotated = rotate_keys(&config, &database, revoke_previous).await;
            database.close().await;
            return rotated;
        }
        // A push needs a registry, not the cluster's database.
        AdminCommand::Engine(EngineCommand::Push {
            file,
            reference,
            signing_key,
            registry,
        }) => return push_component(&file, &reference, signing_key.as_deref(), registry).await,
        AdminCommand::Engine(command) => {
            let database = Database::connect_and_migrate(&config.database).await?;
            let done = engine_command(&config, &database, command).await;
            database.close().await;
            return done;
        }
        AdminCommand::Hosts => {
            let database = Database::connect_and_migrate(&config.database).await?;
            let hosts = crate::cluster::ClusterHosts {
                database: database.clone(),
            }
            .list()
            .await;
            database.close().await;
            return json(hosts?);
        }
        AdminCommand::OperatorToken => {
            let token = crate::secrets::operator_token(&crate::secrets::service_secret(&config)?);
            return Ok(serde_json::json!({ "operator_token": token.expose() }));
        }
        AdminCommand::Tenancy(command) => command,
    };
    let database = Database::connect_and_migrate(&config.database).await?;
    // The same engines as the servers, loaded to run their lifecycle exports; the engine list
    // stays the servers' business.
    let engines = crate::runtime::start_engines(
        config.runtime_setup(&crate::secrets::service_secret(&config)?),
        &database,
        RegistryRole::Borrowing,
    )
    .await?;
    let tenancy = TenancyService::new(
        database.clone(),
        config.auth.password_policy.clone(),
        PasswordHasher::new(1),
        Orchestrator::new(database.clone(), engines),
    );
    let output = run_admin_command(&tenancy, command).await;
    database.close().await;
    output
}

fn json(value: impl Serialize) -> anyhow::Result<Value> {
    Ok(serde_json::to_value(value)?)
}

/// `admin engine push FILE oci://…`.
async fn push_component(
    file: &std::path::Path,
    reference: &str,
    signing_key: Option<&std::path::Path>,
    registry: RegistryArguments,
) -> anyhow::Result<Value> {
    let reference = crate::distribution::ComponentReference::parse(reference)?;
    let component = tokio::fs::read(file)
        .await
        .with_context(|| format!("reading {}", file.display()))?;
    let signing_key = signing_key
        .map(crate::distribution::signature::PublisherKey::read)
        .transpose()?;
    json(
        crate::distribution::push(
            &registry.access()?,
            &reference,
            component,
            signing_key.as_ref(),
        )
        .await?,
    )
}

/// `admin engine …` but `push`.
async fn engine_command(
    config: &Config,
    database: &Database,
    command: EngineCommand,
) -> anyhow::Result<Value> {
    use crate::distribution::ComponentReference;
    use crate::distribution::signature::ComponentSignature;
    use crate::runtime::published;
    let refused = |error: published::PublishError| anyhow::anyhow!("{error}");
    match command {
        EngineCommand::Publish {
            source,
            inactive,
            signature,
            manifest,
            registry,
        } => {
            let manifest = match manifest {
                Some(path) => Some(
                    tokio::fs::read_to_string(&path)
                        .await
                        .with_context(|| format!("reading {}", path.display()))?,
                ),
                None => None,
            };
            let (component, signature, pulled_digest) = if ComponentReference::is_reference(&source)
            {
                anyhow::ensure!(
                    signature.is_none(),
                    "--signature is for a file; an oci:// component carries its signature in its manifest"
                );
                let reference = ComponentReference::parse(&source)?;
                let pulled = crate::distribution::pull(
                    &registry.access()?,
                    &reference,
                    config.runtime.max_component_bytes,
                )
                .await?;
                (pulled.component, pulled.signature, Some(pulled.digest))
            } else {
                let file = PathBuf::from(&source);
                let component = tokio::fs::read(&file)
                    .await
                    .with_context(|| format!("reading {}", file.display()))?;
                let signature = signature
                    .map(|path| ComponentSignature::read(&path))
                    .transpose()?;
                (component, signature, None)
            };
            let registry = crate::runtime::start_registry(
                config.runtime_setup(&crate::secrets::service_secret(config)?),
                database,
                RegistryRole::Borrowing,
            )?;
            let published = published::publish(
                &registry,
                component,
                published::PublishOptions {
                    signature: signature.as_ref(),
                    manifest: manifest.as_deref(),
                    activate: !inactive,
                },
            )
            .await
            .map_err(refused)?;
            let mut published = json(published)?;
            if let Some(digest) = pulled_digest {
                published["oci_digest"] = Value::String(digest);
            }
            Ok(published)
        }
        EngineCommand::Push { .. } => unreachable!("a push is run without a database"),
        EngineCommand::List => json(published::releases(database).await?),
        EngineCommand::Versions { code } => json(
            published::versions(database, &code)
                .await
                .map_err(refused)?,
        ),
        EngineCommand::Activate { code, version } => json(
            published::activate(database, &code, version)
                .await
                .map_err(refused)?,
        ),
        EngineCommand::Deactivate { code } => json(
            published::deactivate(database, &code)
                .await
                .map_err(refused)?,
        ),
        EngineCommand::Rollback { code } => json(
            published::rollback(database, &code)
                .await
                .map_err(refused)?,
        ),
    }
}

/// `admin rotate-keys`: a new signing key (the servers' copies are reread within
/// `signing_keys_refresh`), and with `revoke_previous` no older key verifies any more.
async fn rotate_keys(
    config: &Config,
    database: &Database,
    revoke_previous: bool,
) -> anyhow::Result<Value> {
    let keys = crate::auth::keys::SigningKeys::load_or_create(
        database.clone(),
        &config.auth,
        &crate::secrets::service_secret(config)?,
    )
    .await
    .context("loading the token signing keys")?;
    keys.rotate().await?;
    let revoked_keys = if revoke_previous {
        keys.revoke_retired().await?
    } else {
        0
    };
    Ok(serde_json::json!({
        "kid": keys.signer()?.0,
        "revoked_keys": revoked_keys,
        "servers_sign_with_it_within_seconds": config.auth.signing_keys_refresh.as_secs(),
    }))
}

async fn run_admin_command(
    tenancy: &TenancyService,
    command: TenancyCommand,
) -> anyhow::Result<Value> {
    match command {
        TenancyCommand::CreateTenant { slug, name } => {
            json(tenancy.create_tenant(&slug, &name).await?)
        }
        TenancyCommand::CreateUser {
            tenant,
            email,
            password,
            role,
            user_type,
            first_name,
            last_name,
        } => {
            let new_user = NewUser {
                tenant_slug: tenant,
                email,
                password,
                role: role.into(),
                user_type: user_type.into(),
                first_name,
                last_name,
            };
            json(tenancy.create_user(new_user).await?)
        }
        TenancyCommand::AddMember {
            tenant,
            email,
            role,
        } => json(tenancy.add_member(&tenant, &email, role.into()).await?),
        TenancyCommand::CreateWorkspace { tenant, name } => {
            json(tenancy.create_workspace(&tenant, &name).await?)
        }
        TenancyCommand::ListTenants => json(tenancy.list_tenants().await?),
        TenancyCommand::ShowTenant { tenant } => json(tenancy.show_tenant(&tenant).await?),
        TenancyCommand::ShowUser { email } => json(tenancy.show_user(&email).await?),
        TenancyCommand::ListUsers { tenant } => json(tenancy.list_members(&tenant).await?),
        TenancyCommand::SetRole {
            tenant,
            email,
            role,
        } => json(tenancy.set_role(&tenant, &email, role.into()).await?),
        TenancyCommand::ResetPassword { tenant, email } => {
            let password = tokio::task::spawn_blocking(password_from_stdin)
                .await
                .context("reading the password")??;
            json(tenancy.reset_password(&tenant, &email, password).await?)
        }
        TenancyCommand::DisableUser { email } => json(tenancy.disable_user(&email).await?),
        TenancyCommand::EnableUser { email } => json(tenancy.enable_user(&email).await?),
        TenancyCommand::DeleteUser { email } => json(tenancy.delete_user(&email).await?),
        TenancyCommand::DisableTenant { tenant } => json(tenancy.disable_tenant(&tenant).await?),
        TenancyCommand::EnableTenant { tenant } => json(tenancy.enable_tenant(&tenant).await?),
        TenancyCommand::DeleteTenant { tenant } => json(tenancy.delete_tenant(&tenant).await?),
        TenancyCommand::ListEngines => json(tenancy.list_engines().await?),
        TenancyCommand::RetryProvisioning { tenant } => {
            json(tenancy.retry_provisioning(&tenant).await?)
        }
    }
}

/// The password on standard input: everything up to its end, without the final line break.
fn password_from_stdin() -> anyhow::Result<String> {
    use std::io::Read as _;
    let mut password = String::new();
    std::io::stdin()
        .read_to_string(&mut password)
        .context("reading the password from standard input")?;
    let password = password
        .strip_suffix('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .unwrap_or(&password)
        .to_owned();
    anyhow::ensure!(
        !password.is_empty(),
        "no password on standard input (e.g. `printf %s \"$PASSWORD\" | tessera admin reset-password …`)"
    );
    Ok(password)
}

/// `--role` of the admin commands (the tenancy crate's [`Role`], as the command line names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RoleArg {
    Owner,
    Editor,
    Viewer,
}

impl From<RoleArg> for Role {
    fn from(role: RoleArg) -> Self {
        match role {
            RoleArg::Owner => Role::Owner,
            RoleArg::Editor => Role::Editor,
            RoleArg::Viewer => Role::Viewer,
        }
    }
}

/// `--type` of `admin create-user` (the tenancy crate's [`UserType`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum UserTypeArg {
    User,
    Guest,
    Agent,
}

impl From<UserTypeArg> for UserType {
    fn from(user_type: UserTypeArg) -> Self {
        match user_type {
            UserTypeArg::User => UserType::User,
            UserTypeArg::Guest => UserType::Guest,
            UserTypeArg::Agent => UserType::Agent,
        }
    }
}
