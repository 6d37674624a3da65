//! The tidy tests: the project rules no compiler checks, as `#[test]`s that read the tree as text
//! (modelled on rust-analyzer's `xtask/src/tidy.rs`). `cargo test --workspace` runs them, and so
//! do `cargo xtask test` and `.ci/run`. The rules:
//!
//! 1. Every Rust file opens with a `//!` line saying what it is for.
//! 2. The Tessera crates form layers ([`LAYERS`]): a crate depends only on crates of a lower
//!    layer, and a crate built for wasm32 (the engine SDK) only on crates built for wasm32 too.
//! 3. SQL runs only in store modules (`store.rs`, a `store/` folder, `crates/storage`), tests and
//!    benchmarks.
//!
//! 4. Only the assembly (`host/src/app.rs`, `state.rs`, `server.rs`) names `AppState`: every
//!    service crate takes its own state by `FromRef`, so nothing below the binary can reach
//!    a sibling through the app state.
//! 5. The engines (`engines/*` but the SDK) depend only on Tessera crates that build for wasm32.
//! 6. The host names no engine: outside the spec's service-map keys (`SPEC_SERVICES`), no
//!    string literal of the host's code (`crates/`, `host/src/`; tests aside) is an engine code
//!    of `engines/`, or a path, setting or key prefixed by one (`"/chat/…"`, `"drive.…"`).
//! 7. The SDK's copy of the WIT package (`engines/sdk/wit/`, packaged with the crate so it
//!    builds an engine on its own) is byte for byte the repository's `wit/engine.wit`.
//! 8. `README.md`, `BENCHMARKS.md` and the book's architecture page stay under their sizes.
//! 9. No file names a sitting (the word session and a number): the files speak of the project
//!    only.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// One Tessera crate's place in the layering (see [`LAYERS`]).
struct CrateLayer {
    /// The package name, as in its `Cargo.toml`.
    name: &'static str,
    /// 0 is the bottom; a crate depends only on crates of a lower layer.
    layer: u8,
    /// Built for `wasm32-wasip2` (by the engines): depends only on crates with this set too.
    builds_for_wasm: bool,
}

/// The Tessera crates and their layers. A crate may depend (in `[dependencies]`, also
/// `[build-dependencies]` and the target-specific ones; dev-dependencies are free) only on
/// Tessera crates of a lower layer, and a crate that builds for wasm32 only on crates that build
/// for wasm32 too: so the engine SDK gets the wire rules and the signatures, never the storage
/// layer or the host.
///
/// The host is split into crates (crates/http, crates/auth, crates/runtime, …): add each
/// new crate here, on the lowest layer above every Tessera crate it depends on, and keep
/// `tessera-host` (the assembly) alone on the top layer. A crate missing from this table fails
/// the test.
const LAYERS: &[CrateLayer] = &[
    CrateLayer {
        name: "tessera-signature",
        layer: 0,
        builds_for_wasm: true,
    },
    CrateLayer {
        name: "tessera-distribution",
        layer: 0,
        builds_for_wasm: false,
    },
    CrateLayer {
        name: "tessera-storage",
        layer: 0,
        builds_for_wasm: false,
    },
    CrateLayer {
        name: "tessera-wire",
        layer: 0,
        builds_for_wasm: true,
    },
    CrateLayer {
        name: "tessera-http",
        layer: 1,
        builds_for_wasm: false,
    },
    CrateLayer {
        name: "tessera-sdk",
        layer: 1,
        builds_for_wasm: true,
    },
    CrateLayer {
        name: "tessera-cluster",
        layer: 2,
        builds_for_wasm: false,
    },
    CrateLayer {
        name: "tessera-console",
        layer: 2,
        builds_for_wasm: false,
    },
    CrateLayer {
        name: "tessera-auth",
        layer: 2,
        builds_for_wasm: false,
    },
    CrateLayer {
        name: "tessera-core",
        layer: 3,
        builds_for_wasm: false,
    },
    CrateLayer {
        name: "tessera-runtime",
        layer: 3,
        builds_for_wasm: false,
    },
    CrateLayer {
        name: "tessera-orchestrator",
        layer: 4,
        builds_for_wasm: false,
    },
    CrateLayer {
        name: "tessera-tenancy",
        layer: 5,
        builds_for_wasm: false,
    },
    CrateLayer {
        name: "tessera-host",
        layer: 6,
        builds_for_wasm: false,
    },
];

/// Rule 1: every Rust file opens with a `//!` line saying what it is for.
#[test]
fn every_rust_file_opens_with_a_doc_line() {
    let root = crate::workspace_root();
    let mut failures = Vec::new();
    for path in rust_files(&root) {
        let text = read(&root, &path);
        if !text
            .lines()
            .next()
            .is_some_and(|line| line.starts_with("//!"))
        {
            failures.push(format!(
                "{path}: the first line is not a `//!` line; open the file with a `//!` line \
                 saying what it is for"
            ));
        }
    }
    assert_no_failures("every Rust file opens with a `//!` line", &failures);
}

/// Rule 1b: every host benchmark runs on the `tessera` binary's allocator (mimalloc), so what
/// it measures in-process is what the binary runs: glibc's malloc alone cost the throughput
/// benchmark a seventh of its CPU.
#[test]
fn host_benchmarks_use_the_binarys_allocator() {
    let root = crate::workspace_root();
    let binary = read(&root, "host/src/main.rs");
    assert!(
        binary.contains("static ALLOCATOR: mimalloc::MiMalloc"),
        "host/src/main.rs no longer declares mimalloc: update this rule"
    );
    let mut failures = Vec::new();
    for path in rust_files(&root) {
        let Some(name) = path.strip_prefix("host/benches/") else {
            continue;
        };
        if name.contains('/') {
            continue;
        }
        if !read(&root, &path)
            .contains("static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;")
        {
            failures.push(format!(
                "{path}: declare `#[global_allocator] static ALLOCATOR: mimalloc::MiMalloc = \
                 mimalloc::MiMalloc;`, the binary's allocator"
            ));
        }
    }
    assert_no_failures("host benchmarks use the binary's allocator", &failures);
}

/// Rule 2: a Tessera crate depends only on Tessera crates of a lower layer ([`LAYERS`]), and a
/// crate built for wasm32 only on crates built for wasm32.
#[test]
fn crates_depend_only_on_lower_layers() {
    let root = crate::workspace_root();
    let layers: BTreeMap<&str, &CrateLayer> =
        LAYERS.iter().map(|entry| (entry.name, entry)).collect();
    let manifests = tessera_manifests(&root);
    let mut failures = Vec::new();
    for (path, manifest) in &manifests {
        let Some(this) = layers.get(manifest.name.as_str()) else {
            failures.push(format!(
                "{path}: the crate `{}` is not in LAYERS; add it to LAYERS in xtask/src/tidy.rs, \
                 on the lowest layer above the Tessera crates it depends on",
                manifest.name
            ));
            continue;
        };
        for dependency in &manifest.dependencies {
            let at = format!("{path}:{}", dependency.line);
            let Some(other) = layers.get(dependency.name.as_str()) else {
                failures.push(format!(
                    "{at}: `{}` depends on `{}`, which is not in LAYERS; add it to LAYERS in \
                     xtask/src/tidy.rs",
                    this.name, dependency.name
                ));
                continue;
            };
            if other.layer >= this.layer {
                failures.push(format!(
                    "{at}: `{}` (layer {}) depends on `{}` (layer {}); a crate depends only on \
                     lower layers: move what both need into a lower crate (or, if the design \
                     changed, the crates' rows in LAYERS)",
                    this.name, this.layer, other.name, other.layer
                ));
            }
            if this.builds_for_wasm && !other.builds_for_wasm {
                failures.push(format!(
                    "{at}: `{}` builds for wasm32 but depends on `{}`, which does not; drop the \
                     dependency, and keep what the engines need in a crate that builds for \
                     wasm32 (like tessera-wire)",
                    this.name, other.name
                ));
            }
        }
    }
    for entry in LAYERS {
        if !manifests
            .values()
            .any(|manifest| manifest.name == entry.name)
        {
            failures.push(format!(
                "xtask/src/tidy.rs: LAYERS names `{}`, which no crates/*/Cargo.toml, \
                 host/Cargo.toml, signature/Cargo.toml or engines/sdk/Cargo.toml declares; \
                 remove it from LAYERS",
                entry.name
            ));
        }
    }
    assert_no_failures("crates depend only on lower layers", &failures);
}

/// Rule 3: SQL runs only in store modules, tests and benchmarks.
#[test]
fn sql_runs_only_in_store_modules() {
    let root = crate::workspace_root();
    let mut failures = Vec::new();
    for path in rust_files(&root) {
        if may_run_sql(&path) {
            continue;
        }
        if let Some(evidence) = sql_in(&read(&root, &path)) {
            failures.push(format!(
                "{path}: runs SQL ({evidence}) outside a store module; move the SQL into the \
                 module's store.rs (or a store/ folder beside it)"
            ));
        }
    }
    assert_no_failures("SQL runs only in store modules", &failures);
}

/// The host files that assemble the application and so may name `AppState` (rule 4).
const ASSEMBLY: &[&str] = &["host/src/app.rs", "host/src/server.rs", "host/src/state.rs"];

/// Rule 4: only the assembly names `AppState` (tests and benchmarks aside).
#[test]
fn only_the_assembly_names_the_app_state() {
    let root = crate::workspace_root();
    let mut failures = Vec::new();
    for path in rust_files(&root) {
        if ASSEMBLY.contains(&path.as_str()) || is_test_or_bench(&path) {
            continue;
        }
        let code = lex(&read(&root, &path)).code;
        let names_it = code
            .match_indices("AppState")
            .any(|(at, _)| is_whole_word(&code, at, "AppState".len()));
        if names_it {
            failures.push(format!(
                "{path}: names `AppState` outside the assembly ({}); take the service's own \
                 state by `FromRef` instead",
                ASSEMBLY.join(", ")
            ));
        }
    }
    assert_no_failures("only the assembly names AppState", &failures);
}

/// Rule 5: an engine depends only on Tessera crates that build for wasm32 (the SDK, the wire
/// rules, the signatures), never on the host's.
#[test]
fn engines_depend_only_on_crates_that_build_for_wasm() {
    let root = crate::workspace_root();
    let layers: BTreeMap<&str, &CrateLayer> =
        LAYERS.iter().map(|entry| (entry.name, entry)).collect();
    let mut failures = Vec::new();
    let engines = std::fs::read_dir(root.join("engines"))
        .unwrap_or_else(|error| panic!("reading {}/engines: {error}", root.display()));
    let mut manifests: Vec<String> = engines
        .map(|entry| entry.expect("reading engines/").file_name())
        .map(|name| format!("engines/{}/Cargo.toml", name.to_string_lossy()))
        .filter(|path| path != "engines/sdk/Cargo.toml" && root.join(path).is_file())
        .collect();
    manifests.sort();
    assert!(!manifests.is_empty(), "no engine manifests under engines/");
    for path in &manifests {
        let manifest = parse_manifest(&read(&root, path));
        for dependency in &manifest.dependencies {
            let builds_for_wasm = layers
                .get(dependency.name.as_str())
                .is_some_and(|layer| layer.builds_for_wasm);
            if !builds_for_wasm {
                failures.push(format!(
                    "{path}:{}: the engine `{}` depends on `{}`, which does not build for \
                     wasm32 (see LAYERS); engines use the SDK and the wasm32 crates only",
                    dependency.line, manifest.name, dependency.name
                ));
            }
        }
    }
    assert_no_failures("engines depend only on wasm32 crates", &failures);
}

/// The one place that may name the built-in engines: the spec's service-map keys.
const SERVICE_MAP_KEYS: (&str, &str) = (
    "crates/auth/src/routes/answers.rs",
    "pub const SPEC_SERVICES",
);

/// Rule 6: the host names no engine. Engine codes come from `engines/` (every folder but the
/// SDK), so a new engine there is covered too.
#[test]
fn the_host_names_no_engine() {
    let root = crate::workspace_root();
    let mut codes: Vec<String> = std::fs::read_dir(root.join("engines"))
        .unwrap_or_else(|error| panic!("reading {}/engines: {error}", root.display()))
        .map(|entry| entry.expect("reading engines/"))
        .filter(|entry| entry.path().join("Cargo.toml").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "sdk")
        .collect();
    codes.sort();
    assert!(
        codes.len() >= 7,
        "fewer engines than expected under engines/: {codes:?}"
    );
    let mut failures = Vec::new();
    for path in rust_files(&root) {
        let is_host = path.starts_with("crates/") || path.starts_with("host/src/");
        if !is_host || is_test_or_bench(&path) {
            continue;
        }
        let text = read(&root, &path);
        for literal in engine_names_in(&path, &text, &codes) {
            failures.push(format!(
                "{path}: names the engine {literal:?}; the host knows engines only through the \
                 registry (engine-specific settings are the engine's declared settings)"
            ));
        }
    }
    assert_no_failures("the host names no engine", &failures);
}

/// The string literals of `text` (the file at `path`) that name one of `codes`: the code itself,
/// a path with it as a segment, or a name prefixed by it and a `.`, `/` or `:`. Unit tests
/// (from the first `#[cfg(test)]`) and the service-map keys are skipped.
fn engine_names_in(path: &str, text: &str, codes: &[String]) -> Vec<String> {
    let mut text = text
        .split("#[cfg(test)]")
        .next()
        .unwrap_or_default()
        .to_owned();
    if path == SERVICE_MAP_KEYS.0
        && let Some(start) = text.find(SERVICE_MAP_KEYS.1)
        && let Some(length) = text[start..].find("];")
    {
        text.replace_range(start..start + length, "");
    }
    lex(&text)
        .strings
        .into_iter()
        .filter(|literal| {
            codes.iter().any(|code| {
                literal == code
                    || literal.contains(&format!("/{code}/"))
                    || literal.ends_with(&format!("/{code}"))
                    || [".", "/", ":"]
                        .iter()
                        .any(|separator| literal.starts_with(&format!("{code}{separator}")))
            })
        })
        .collect()
}

/// Whether the file at `path` is a test or a benchmark (their own rules are looser).
fn is_test_or_bench(path: &str) -> bool {
    path.split('/')
        .any(|folder| matches!(folder, "tests" | "benches"))
}

/// Whether `code[at..at + len]` is a whole identifier (no identifier character either side).
fn is_whole_word(code: &str, at: usize, len: usize) -> bool {
    let is_identifier = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let before = code[..at].chars().next_back();
    let after = code[at + len..].chars().next();
    !before.is_some_and(is_identifier) && !after.is_some_and(is_identifier)
}

/// Whether SQL belongs in the file at `path` (relative to the root, `/`-separated): the storage
/// crate, a module's `store.rs` or `store/` folder, migrations, tests and benchmarks.
fn may_run_sql(path: &str) -> bool {
    let (folders, file) = match path.rsplit_once('/') {
        Some((folders, file)) => (folders, file),
        None => ("", path),
    };
    path.starts_with("crates/storage/")
        || file == "store.rs"
        || is_test_or_bench(path)
        || folders
            .split('/')
            .any(|folder| matches!(folder, "store" | "migrations"))
}

/// What makes code run SQL: sqlx's query functions and builder.
const SQL_CALLS: &[&str] = &[
    "sqlx::query",
    "query_scalar(",
    "query_scalar::<",
    "query_as(",
    "query_as::<",
    "QueryBuilder",
];

/// The statements a string literal of SQL starts with.
const SQL_KEYWORDS: &[&str] = &["SELECT", "INSERT", "UPDATE", "DELETE", "WITH"];

/// The first sign that `text` (a Rust file) runs SQL, if any: a call of [`SQL_CALLS`] in its
/// code, or a string literal that starts with a statement of [`SQL_KEYWORDS`] and goes on
/// (`"DELETE"` alone is an HTTP method). Comments, doc comments included, do not count.
fn sql_in(text: &str) -> Option<String> {
    let lexed = lex(text);
    if let Some(call) = SQL_CALLS.iter().find(|call| lexed.code.contains(*call)) {
        return Some(format!("`{call}`"));
    }
    lexed.strings.iter().find_map(|literal| {
        let start = literal.trim_start_matches(|c: char| c.is_whitespace() || c == '\\');
        SQL_KEYWORDS.iter().find_map(|keyword| {
            let after = start.strip_prefix(keyword)?;
            // `"DELETE /api/v1/…"` is an HTTP method and a path, not a statement.
            let goes_on = after.starts_with(char::is_whitespace)
                && !after.trim().is_empty()
                && !after.trim_start().starts_with('/');
            goes_on.then(|| format!("the string literal \"{keyword} …\""))
        })
    })
}

/// A Rust file as a rough lexer sees it.
struct Lexed {
    /// The code, with comments and string literals blanked out.
    code: String,
    /// The contents of the string literals (raw, byte and C strings included), unescaped not.
    strings: Vec<String>,
}

/// Splits `text` into its code and its string literals, dropping comments. Enough of Rust's
/// lexer for the rules here: line and (nested) block comments, strings with escapes, raw
/// strings, character literals and lifetimes.
fn lex(text: &str) -> Lexed {
    let bytes = text.as_bytes();
    let is_identifier = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_';
    let mut code = String::with_capacity(text.len());
    let mut strings = Vec::new();
    let mut copied_up_to = 0;
    let mut index = 0;
    // Everything between `copied_up_to` and a token's start is code; tokens become a space.
    let skip = |code: &mut String, copied_up_to: &mut usize, start: usize, end: usize| {
        code.push_str(&text[*copied_up_to..start]);
        code.push(' ');
        *copied_up_to = end;
    };
    while index < bytes.len() {
        let rest = &bytes[index..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&byte| byte == b'\n')
                .map_or(bytes.len(), |offset| index + offset);
            skip(&mut code, &mut copied_up_to, index, end);
            index = end;
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            let mut end = index;
            while end < bytes.len() {
                if bytes[end..].starts_with(b"/*") {
                    depth += 1;
                    end += 2;
                } else if bytes[end..].starts_with(b"*/") {
                    depth -= 1;
                    end += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    end += 1;
                }
            }
            let end = end.min(bytes.len());
            skip(&mut code, &mut copied_up_to, index, end);
            index = end;
        } else if bytes[index] == b'"' {
            let mut end = index + 1;
            while end < bytes.len() && bytes[end] != b'"' {
                end += if bytes[end] == b'\\' { 2 } else { 1 };
            }
            let end = end.min(bytes.len());
            strings.push(text[index + 1..end].to_owned());
            let end = (end + 1).min(bytes.len());
            skip(&mut code, &mut copied_up_to, index, end);
            index = end;
        } else if bytes[index] == b'r'
            && (index == 0
                || !is_identifier(bytes[index - 1])
                || (matches!(bytes[index - 1], b'b' | b'c')
                    && (index == 1 || !is_identifier(bytes[index - 2]))))
            && raw_string_at(bytes, index).is_some()
        {
            let (content_start, hashes) = raw_string_at(bytes, index).expect("checked above");
            let mut closing = String::from("\"");
            closing.push_str(&"#".repeat(hashes));
            let content_end = text[content_start..]
                .find(&closing)
                .map_or(bytes.len(), |offset| content_start + offset);
            strings.push(text[content_start..content_end].to_owned());
            let end = (content_end + closing.len()).min(bytes.len());
            skip(&mut code, &mut copied_up_to, index, end);
            index = end;
        } else if bytes[index] == b'\'' {
            index = match character_literal_end(bytes, index) {
                Some(end) => {
                    skip(&mut code, &mut copied_up_to, index, end);
                    end
                }
                // A lifetime or a label: code.
                None => index + 1,
            };
        } else {
            index += 1;
        }
    }
    code.push_str(&text[copied_up_to.min(text.len())..]);
    Lexed { code, strings }
}

/// If a raw string starts at `index` (`r"…"`, `r#"…"#`, …): where its contents start and how
/// many `#` close it.
fn raw_string_at(bytes: &[u8], index: usize) -> Option<(usize, usize)> {
    let hashes = bytes[index + 1..]
        .iter()
        .take_while(|&&byte| byte == b'#')
        .count();
    let quote = index + 1 + hashes;
    (bytes.get(quote) == Some(&b'"')).then_some((quote + 1, hashes))
}

/// If a character literal starts at `index` (a `'`), the index just past it; `None` for a
/// lifetime or a label.
fn character_literal_end(bytes: &[u8], index: usize) -> Option<usize> {
    let first = *bytes.get(index + 1)?;
    if first == b'\\' {
        // `'\n'`, `'\''`, `'\u{…}'`: the escaped character, then up to the closing quote.
        let closing = bytes
            .get(index + 3..)?
            .iter()
            .position(|&byte| byte == b'\'')?;
        return Some(index + 3 + closing + 1);
    }
    let width = match first {
        0xF0.. => 4,
        0xE0.. => 3,
        0xC0.. => 2,
        _ => 1,
    };
    (bytes.get(index + 1 + width) == Some(&b'\'')).then_some(index + 2 + width)
}

/// A Tessera crate's manifest, as far as the layering needs it.
struct Manifest {
    /// `[package] name`.
    name: String,
    /// The `tessera-*` crates it depends on (not as dev-dependencies).
    dependencies: Vec<Dependency>,
}

/// One `tessera-*` dependency of a manifest.
struct Dependency {
    /// The package depended on (`package = "…"` when renamed).
    name: String,
    /// Its 1-based line in the manifest.
    line: usize,
}

/// The Tessera crates' manifests, by path relative to the root: `crates/*/Cargo.toml`,
/// `host/Cargo.toml`, `signature/Cargo.toml` and `engines/sdk/Cargo.toml`.
fn tessera_manifests(root: &Path) -> BTreeMap<String, Manifest> {
    let mut paths: Vec<String> = ["host", "signature", "engines/sdk"]
        .iter()
        .map(|folder| format!("{folder}/Cargo.toml"))
        .collect();
    let crates = std::fs::read_dir(root.join("crates"))
        .unwrap_or_else(|error| panic!("reading {}/crates: {error}", root.display()));
    for entry in crates {
        let entry = entry.expect("reading crates/");
        if entry.path().join("Cargo.toml").is_file() {
            paths.push(format!(
                "crates/{}/Cargo.toml",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    paths
        .into_iter()
        .map(|path| {
            let manifest = parse_manifest(&read(root, &path));
            (path, manifest)
        })
        .collect()
}

/// A small line parser of a `Cargo.toml`: the package name and the `tessera-*` entries of
/// `[dependencies]`, `[build-dependencies]`, `[target.….dependencies]` and
/// `[dependencies.tessera-…]` tables; never `[dev-dependencies]`.
fn parse_manifest(text: &str) -> Manifest {
    enum Section {
        Package,
        Dependencies,
        /// `[dependencies.NAME]`: the index of its entry in `dependencies`.
        DependencyTable(usize),
        Other,
    }
    let mut name = String::new();
    let mut dependencies: Vec<Dependency> = Vec::new();
    let mut section = Section::Other;
    for (number, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_matches(|c| c == '[' || c == ']').trim();
            section = if header == "package" {
                Section::Package
            } else if header.contains("dev-dependencies") {
                Section::Other
            } else if let Some(position) = header.find("dependencies") {
                match header[position + "dependencies".len()..].strip_prefix('.') {
                    Some(table) => {
                        dependencies.push(Dependency {
                            name: table.trim_matches('"').to_owned(),
                            line: number + 1,
                        });
                        Section::DependencyTable(dependencies.len() - 1)
                    }
                    None => Section::Dependencies,
                }
            } else {
                Section::Other
            };
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim().trim_matches('"');
        match section {
            Section::Package if key == "name" => name = unquote(value).to_owned(),
            Section::Dependencies => {
                // `tessera-wire.workspace = true` or `wire = { package = "tessera-wire", … }`.
                let key = key.split('.').next().unwrap_or(key).trim_matches('"');
                let package = value
                    .split_once("package")
                    .and_then(|(_, rest)| rest.trim_start().strip_prefix('='))
                    .map(unquote);
                dependencies.push(Dependency {
                    name: package.unwrap_or(key).to_owned(),
                    line: number + 1,
                });
            }
            Section::DependencyTable(entry) if key == "package" => {
                dependencies[entry].name = unquote(value).to_owned();
            }
            _ => {}
        }
    }
    dependencies.retain(|dependency| dependency.name.starts_with("tessera-"));
    Manifest { name, dependencies }
}

/// The first quoted string of a TOML value (`"x"` → `x`).
fn unquote(value: &str) -> &str {
    let value = value.trim_start();
    value
        .strip_prefix('"')
        .and_then(|rest| rest.split('"').next())
        .unwrap_or(value)
}

/// The Rust files of the tree, relative to `root` and sorted: tracked ones and new ones git does
/// not ignore, that exist on disk, outside any `target/` folder.
fn rust_files(root: &Path) -> Vec<String> {
    tree_files(root, "*.rs")
}

/// The files of the tree matching a git pathspec (`*.rs`), relative to `root` and sorted:
/// tracked ones and new ones git does not ignore, that exist on disk, outside any `target/` or
/// `node_modules/` folder.
fn tree_files(root: &Path, pathspec: &str) -> Vec<String> {
    let output = Command::new("git")
        .args([
            "ls-files",
            "--cached",
            "--others",
            "--exclude-standard",
            "-z",
        ])
        .args(["--", pathspec])
        .current_dir(root)
        .output()
        .expect("running `git ls-files` (the tidy tests list the tree's files through git)");
    assert!(
        output.status.success(),
        "`git ls-files` failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut files: Vec<String> = String::from_utf8(output.stdout)
        .expect("file names are UTF-8")
        .split('\0')
        .filter(|path| !path.is_empty())
        .filter(|path| {
            !path
                .split('/')
                .any(|folder| folder == "target" || folder == "node_modules")
        })
        .filter(|path| root.join(path).is_file())
        .map(str::to_owned)
        .collect();
    files.sort_unstable();
    files.dedup();
    assert!(
        !files.is_empty(),
        "git lists no {pathspec} files under {}",
        root.display()
    );
    files
}

/// Rule 8: the pages a newcomer reads first stay short: the README (a two-minute read), the
/// benchmarks (current figures, one table per area) and the architecture page (a map, not a
/// manual). Reference material belongs in the book's other pages.
#[test]
fn the_first_pages_stay_short() {
    let root = crate::workspace_root();
    let mut failures = Vec::new();
    for (path, limit) in [
        ("README.md", 15_000),
        ("BENCHMARKS.md", 30_000),
        ("docs/src/architecture.md", 40_000),
    ] {
        let bytes = read(&root, path).len();
        if bytes >= limit {
            failures.push(format!(
                "{path} is {bytes} bytes, the limit is {limit}: move reference material to the book page that owns it"
            ));
        }
    }
    assert_no_failures("the first pages stay short", &failures);
}

/// Rule 9: the project's files speak of the project only: no sittings or session numbers in
/// the documentation or the code's comments (a benchmark holds current figures; history is
/// git's). Migrations are left as they were applied (their checksums are recorded in every
/// database).
#[test]
fn the_files_speak_of_the_project_only() {
    let root = crate::workspace_root();
    let mut failures = Vec::new();
    for pathspec in ["*.md", "*.rs", "*.py", "*.js", "*.toml", "*.wit"] {
        for path in tree_files(&root, pathspec) {
            if path.starts_with("migrations/") {
                continue;
            }
            let text = read(&root, &path).to_ascii_lowercase();
            for (line_number, line) in text.lines().enumerate() {
                if names_a_sitting(line) {
                    failures.push(format!("{path}:{}: {}", line_number + 1, line.trim()));
                }
            }
        }
    }
    assert_no_failures("the files speak of the project only", &failures);
}

/// Whether a lower-cased line says "session" followed by a space and a digit.
fn names_a_sitting(line: &str) -> bool {
    line.match_indices("session ").any(|(at, found)| {
        line[at + found.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

/// Rule 7: the packaged SDK carries the engine world the host implements, not a drifted copy.
#[test]
fn the_sdk_carries_the_wit_package_of_the_host() {
    let root = crate::workspace_root();
    let (source, copy) = ("wit/engine.wit", "engines/sdk/wit/engine.wit");
    let mut failures = Vec::new();
    if read(&root, source) != read(&root, copy) {
        failures.push(format!(
            "{copy} differs from {source}: the SDK is packaged with its own copy of the world; \
             copy it again (`cp {source} {copy}`)"
        ));
    }
    let copies: Vec<String> = std::fs::read_dir(root.join("engines/sdk/wit"))
        .expect("reading engines/sdk/wit")
        .map(|entry| entry.expect("an entry of engines/sdk/wit").file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .collect();
    if copies != ["engine.wit"] {
        failures.push(format!(
            "engines/sdk/wit holds {copies:?}; it holds exactly the world's engine.wit"
        ));
    }
    assert_no_failures("the SDK's WIT is the host's", &failures);
}

fn read(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(path))
        .unwrap_or_else(|error| panic!("reading {path}: {error}"))
}

fn assert_no_failures(rule: &str, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "\ntidy: {rule}: {} problem(s)\n\n{}\n",
        failures.len(),
        failures.join("\n")
    );
}

/// The engine-name detector finds codes, paths and prefixes in string literals, not words in
/// prose, comments, unit tests or the service-map keys.
#[test]
fn engine_name_detector_sees_codes_not_words() {
    let codes = ["chat".to_owned(), "mail".to_owned()];
    let found = |path: &str, text: &str| engine_names_in(path, text, &codes);
    assert_eq!(found("host/src/x.rs", r#"let c = "chat";"#), ["chat"]);
    assert_eq!(
        found("host/src/x.rs", r#"get("/chat/api/v1/x")"#),
        ["/chat/api/v1/x"]
    );
    assert_eq!(
        found("host/src/x.rs", r#"get("mail.relay-configured")"#),
        ["mail.relay-configured"]
    );
    assert!(
        found(
            "host/src/x.rs",
            r#"// "chat"
        let m = "the relay did not accept the mail"; let t = "mail-transport.available";"#
        )
        .is_empty()
    );
    assert!(
        found(
            "host/src/x.rs",
            "fn f() {}\n#[cfg(test)]\nmod tests { const C: &str = \"chat\"; }"
        )
        .is_empty()
    );
    assert!(
        found(
            SERVICE_MAP_KEYS.0,
            "pub const SPEC_SERVICES: [&str; 2] = [\"chat\", \"mail\"];\nfn f() {}"
        )
        .is_empty()
    );
    assert_eq!(
        found(
            SERVICE_MAP_KEYS.0,
            "pub const SPEC_SERVICES: [&str; 0] = [];\nconst X: &str = \"mail\";"
        ),
        ["mail"]
    );
}

/// The SQL detector sees queries in code and string literals, not in comments, and not HTTP
/// methods.
#[test]
fn sql_detector_sees_queries_not_comments() {
    assert!(sql_in(r#"let rows = sqlx::query(sql).fetch_all(pool);"#).is_some());
    assert!(sql_in(r#"let n: i64 = query_scalar::<_, i64>(sql);"#).is_some());
    assert!(sql_in(r#"let mut builder = QueryBuilder::new(sql);"#).is_some());
    assert!(sql_in(r#"const COUNT: &str = "SELECT COUNT(*) FROM events";"#).is_some());
    assert!(sql_in("let sql = r#\"\n    UPDATE jobs SET done = TRUE\"#;").is_some());
    assert!(sql_in("let sql = \"\\\n    DELETE FROM jobs\";").is_some());

    assert!(sql_in(r#"/// Calls `sqlx::query("SELECT 1")` for you."#).is_none());
    assert!(sql_in(r#"// sqlx::query("SELECT 1")"#).is_none());
    assert!(sql_in(r#"/* QueryBuilder /* nested */ still a comment */ let x = 1;"#).is_none());
    assert!(sql_in(r#"router.route("DELETE", "/api/v1/notes", handler);"#).is_none());
    assert!(sql_in(r#"let message = "sqlx::query failed";"#).is_none());
    assert!(sql_in(r#"let quote = '"'; let text = "not SQL"; fn f<'a>(x: &'a str) {}"#).is_none());
    assert!(sql_in(r#"let route = "DELETE /api/v1/notes/{id}";"#).is_none());
    assert!(sql_in(r#"let escaped = "a \" SELECT x FROM y";"#).is_none());
}

/// The lexer behind the SQL rule reads every Rust file of the tree: no quote is left in the
/// code it returns (else a string it missed could hide SQL, or code be taken for a string).
#[test]
fn sql_detector_lexes_every_file() {
    let root = crate::workspace_root();
    let failures: Vec<String> = rust_files(&root)
        .into_iter()
        .filter(|path| lex(&read(&root, path)).code.contains('"'))
        .map(|path| {
            format!(
                "{path}: the tidy lexer misreads this file (a quote is left in its code); teach \
                 `lex` in xtask/src/tidy.rs the syntax it misses"
            )
        })
        .collect();
    assert_no_failures("the SQL detector reads every file", &failures);
}

/// The manifest parser finds `tessera-*` dependencies in every form, and never dev-dependencies.
#[test]
fn manifest_parser_reads_every_dependency_form() {
    let manifest = parse_manifest(
        r#"
[package]
name = "tessera-example"

[dependencies]
serde.workspace = true
tessera-wire.workspace = true # shared rules
tessera-signature = { path = "../signature" }
storage = { package = "tessera-storage", path = "../storage" }

[target.'cfg(unix)'.dependencies]
tessera-http = { workspace = true }

[dependencies.tessera-auth]
workspace = true

[dependencies.runtime]
package = "tessera-runtime"

[dev-dependencies]
tessera-host.workspace = true
"#,
    );
    assert_eq!(manifest.name, "tessera-example");
    let names: Vec<&str> = manifest
        .dependencies
        .iter()
        .map(|dependency| dependency.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "tessera-wire",
            "tessera-signature",
            "tessera-storage",
            "tessera-http",
            "tessera-auth",
            "tessera-runtime"
        ]
    );
    assert_eq!(manifest.dependencies[0].line, 7);
}

/// The crates whose insides rules 10 and 11 keep: their source folder and the state type their
/// routes take (`FromRef` of the app's state).
const LAYERED_CRATES: &[(&str, &str)] = &[
    ("crates/auth/src", "AuthState"),
    ("crates/core/src", "CoreState"),
    ("crates/runtime/src", "RuntimeState"),
];

/// A module of a crate: its path from the crate root (`["projections", "store", "log"]`), and
/// the crate paths its code names (`crate::…`, `super::…`, `self::…` resolved to whole paths),
/// tests left out.
struct CrateModule {
    file: String,
    path: Vec<String>,
    names: Vec<Vec<String>>,
    code: String,
}

/// Every module of the crate whose sources are under `source` (a folder of `root`).
fn crate_modules(root: &Path, source: &str) -> Vec<CrateModule> {
    let prefix = format!("{source}/");
    rust_files(root)
        .into_iter()
        .filter_map(|file| {
            let relative = file.strip_prefix(&prefix)?.strip_suffix(".rs")?.to_owned();
            let mut path: Vec<String> = relative.split('/').map(str::to_owned).collect();
            if matches!(
                path.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                path.pop();
            }
            let text = read(root, &file);
            // A module's own tests (`#[cfg(test)] mod tests`, at its end) are not its imports.
            let text = text
                .find("#[cfg(test)]\nmod tests")
                .map_or(text.as_str(), |at| &text[..at]);
            let code = lex(text).code;
            let names = crate_paths(&code, &path);
            Some(CrateModule {
                file,
                path,
                names,
                code,
            })
        })
        .collect()
}

/// The crate paths `code` names, resolved from the module at `module`: `crate::a::b` as
/// `[a, b]`, `super::c` from `[x, y]` as `[x, c]`, `crate::{a, b::c}` as `[a]` and `[b, c]`.
fn crate_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let is_identifier = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut paths = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(start) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| is_identifier(c) || c == ':') {
                continue;
            }
            let mut base: Vec<String> = match start {
                "crate::" => Vec::new(),
                "self::" => module.to_vec(),
                _ => module[..module.len().saturating_sub(1)].to_vec(),
            };
            let mut rest = &code[at + start.len()..];
            while let Some(after) = rest.strip_prefix("super::") {
                base.pop();
                rest = after;
            }
            let mut heads = Vec::new();
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                let mut depth = 0;
                let mut item_start = 0;
                let group = &group[..end];
                for (index, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            heads.push(&group[item_start..index]);
                            item_start = index + 1;
                        }
                        _ => {}
                    }
                }
                heads.push(&group[item_start..]);
            } else {
                heads.push(rest);
            }
            for head in heads {
                let mut path = base.clone();
                for segment in head.trim_start().split("::") {
                    let identifier: String =
                        segment.chars().take_while(|c| is_identifier(*c)).collect();
                    if identifier.is_empty() {
                        break;
                    }
                    let whole = identifier.len() == segment.len();
                    path.push(identifier);
                    if !whole {
                        break;
                    }
                }
                paths.push(path);
            }
        }
    }
    paths
}

/// The module a crate path lands in: its longest prefix that is a module of the crate (the
/// crate's root aside: what it re-exports is found where it is defined, or not at all).
fn module_of<'a>(modules: &'a [CrateModule], path: &[String]) -> Option<&'a CrateModule> {
    (1..=path.len())
        .rev()
        .find_map(|length| modules.iter().find(|module| module.path == path[..length]))
}

fn is_store_module(path: &[String]) -> bool {
    path.iter()
        .any(|segment| segment == "store" || segment.ends_with("_store"))
}

fn is_route_module(module: &CrateModule) -> bool {
    module.path.is_empty()
        || module.path == ["state"]
        || module
            .path
            .iter()
            .any(|segment| segment == "routes" || segment.ends_with("_routes"))
}

/// Rule 10: inside a layered crate, only its route modules (`routes.rs`, a `routes/` folder,
/// `*_routes.rs`), its `state.rs` and its root name the crate's state: a service takes what it
/// needs (the database, its settings, a handle) and never reaches back into the state that
/// holds it.
#[test]
fn only_route_modules_name_their_crates_state() {
    let root = crate::workspace_root();
    let mut failures = Vec::new();
    for (source, state) in LAYERED_CRATES {
        for module in crate_modules(&root, source) {
            if is_route_module(&module) {
                continue;
            }
            let names_it = module
                .code
                .match_indices(state)
                .any(|(at, _)| is_whole_word(&module.code, at, state.len()));
            if names_it {
                failures.push(format!(
                    "{}: names `{state}`; only route modules take the state: hand this module \
                     the narrow values it needs instead",
                    module.file
                ));
            }
        }
    }
    assert_no_failures("only route modules name their crate's state", &failures);
}

/// Rule 11: inside a layered crate, a store module (a `store.rs`, a file under a `store/`
/// folder) owns its rows and converts at its boundary: it imports only other store modules and
/// leaf modules (modules that import nothing of the crate), never the services and routes above
/// it.
#[test]
fn store_modules_import_nothing_above_them() {
    let root = crate::workspace_root();
    let mut failures = Vec::new();
    for (source, _) in LAYERED_CRATES {
        let modules = crate_modules(&root, source);
        for module in modules
            .iter()
            .filter(|module| is_store_module(&module.path))
        {
            for name in &module.names {
                let Some(target) = module_of(&modules, name) else {
                    continue;
                };
                let is_leaf = target
                    .names
                    .iter()
                    .all(|path| module_of(&modules, path).is_none_or(|m| m.path == target.path));
                if target.path == module.path || is_store_module(&target.path) || is_leaf {
                    continue;
                }
                failures.push(format!(
                    "{}: imports `{}` from {}, a module above the store; move what the store \
                     needs down into it (or into a leaf module) and convert at its boundary",
                    module.file,
                    name.join("::"),
                    target.file
                ));
            }
        }
    }
    failures.sort();
    failures.dedup();
    assert_no_failures("store modules import nothing above them", &failures);
}

#[test]
fn crate_paths_resolve_crate_super_and_groups() {
    let module = vec![
        "projections".to_owned(),
        "store".to_owned(),
        "log".to_owned(),
    ];
    let code = "use crate::{events::StoredEvent, store::{a, b}};\nuse super::checkpoints;\n\
                let x = super::super::worker::LogPosition::ZERO;";
    let paths: Vec<String> = crate_paths(code, &module)
        .iter()
        .map(|path| path.join("::"))
        .collect();
    assert_eq!(
        paths,
        [
            "events::StoredEvent",
            "store",
            "projections::store::checkpoints",
            "projections::worker::LogPosition::ZERO"
        ]
    );
}
