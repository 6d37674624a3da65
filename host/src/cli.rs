//! The `tessera` command line: `serve` and the `admin` commands of CONTRACT §3. Admin
//! commands print one JSON object on stdout and exit 0, or a message on stderr and exit 1.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use serde::Serialize;

use crate::auth::password::PasswordHasher;
use crate::config::{Config, ServeArgs, StorageArgs};
use crate::orchestrator::Orchestrator;
use crate::runtime::RegistryRole;
use crate::server::{Application, shutdown_signal};
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
    /// Serve /auth, /core and every engine on one listener.
    Serve(ServeArgs),
    /// Administer tenants, users and workspaces (works while a server runs).
    Admin(AdminArgs),
}

#[derive(Debug, Args)]
pub struct AdminArgs {
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(subcommand)]
    pub command: AdminCommand,
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    #[command(flatten)]
    Tenancy(TenancyCommand),
    /// Empty every read model (timeline, inbox, search index) and replay the event log into
    /// it. Safe while servers run; the workflow worker is not replayed.
    RebuildProjections,
    /// Write a consistent copy of the embedded (SQLite) database and the service secret to one
    /// archive (mode 0600) while servers run. PostgreSQL: use pg_dump (README).
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
        Command::Serve(args) => {
            crate::telemetry::init("info");
            let served = runtime.block_on(serve(args));
            // Past the shutdown deadline, tasks still running are dropped, not waited for.
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
            match served {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    tracing::error!(
                        error = format!("{error:#}"),
                        "tessera stopped with an error"
                    );
                    eprintln!("error: {error:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Admin(args) => {
            crate::telemetry::init("warn");
            match runtime.block_on(admin(args)) {
                Ok(output) => {
                    println!("{output}");
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

/// Runs one admin command; returns the JSON to print.
pub async fn admin(args: AdminArgs) -> anyhow::Result<String> {
    let config = Config::from_serve_args(ServeArgs {
        storage: args.storage.clone(),
        listen: ([127, 0, 0, 1], 8080).into(),
        public_url: None,
        max_body_bytes: 1024 * 1024,
    })?;
    let command = match args.command {
        // Backups and restores handle files; they must not create or migrate a database.
        AdminCommand::Backup { to } => {
            return Ok(serde_json::to_string(
                &crate::backup::backup(&config, &to).await?,
            )?);
        }
        AdminCommand::Restore { from } => {
            return Ok(serde_json::to_string(
                &crate::backup::restore(&config, &from).await?,
            )?);
        }
        AdminCommand::RebuildProjections => {
            let database = Database::connect_and_migrate(&config.database).await?;
            let rebuilt =
                crate::core::projections::rebuild(&database, config.projections.batch_size).await;
            database.close().await;
            return Ok(serde_json::to_string(
                &serde_json::json!({ "rebuilt": rebuilt? }),
            )?);
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

async fn run_admin_command(
    tenancy: &TenancyService,
    command: TenancyCommand,
) -> anyhow::Result<String> {
    fn json(value: impl Serialize) -> anyhow::Result<String> {
        Ok(serde_json::to_string(&value)?)
    }
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
