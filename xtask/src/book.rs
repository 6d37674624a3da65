//! `cargo xtask book`: builds the book in `docs/` with mdBook and fails on any link that does not
//! resolve. Every relative `href`/`src` of the rendered pages must name a file of the output, and
//! every `#fragment` an `id` of the page it points into; the Markdown files outside the book
//! (`README.md`, `BENCHMARKS.md`, the READMEs under `engines/` and `sdk/`) must link only to
//! files that exist, and to headings they have.
//!
//! mdBook is installed on first use under the target dir (`tools/bin/mdbook`, the pinned
//! [`MDBOOK_VERSION`]) unless an `mdbook` of that version is on the `PATH`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

/// The mdBook the book is built with.
const MDBOOK_VERSION: &str = "0.5.4";

/// The Markdown files outside the book whose links are checked too.
const LOOSE_PAGES: &[&str] = &[
    "README.md",
    "BENCHMARKS.md",
    "engines/README.md",
    "sdk/python/README.md",
    "sdk/javascript/README.md",
];

/// Builds the book into `<target>/book` and checks every link of it and of [`LOOSE_PAGES`].
pub fn build_and_check(root: &Path, target: &Path) -> anyhow::Result<()> {
    let mdbook = ensure_mdbook(target)?;
    let out = target.join("book");
    let status = Command::new(&mdbook)
        .arg("build")
        .arg(root.join("docs"))
        .arg("--dest-dir")
        .arg(&out)
        .status()
        .with_context(|| format!("running {}", mdbook.display()))?;
    if !status.success() {
        bail!("`mdbook build docs` failed ({status})");
    }
    let mut broken = check_rendered(&out)?;
    for page in LOOSE_PAGES {
        let path = root.join(page);
        if path.is_file() {
            broken.extend(check_markdown(root, &path)?);
        }
    }
    if !broken.is_empty() {
        bail!(
            "{} broken link(s) in the documentation:\n  {}",
            broken.len(),
            broken.join("\n  ")
        );
    }
    println!(
        "xtask: the book is in {} and every link resolves",
        out.display()
    );
    Ok(())
}

/// The `mdbook` to run: one of [`MDBOOK_VERSION`] on the `PATH`, else the one under
/// `<target>/tools`, installed there with `cargo install` when missing.
fn ensure_mdbook(target: &Path) -> anyhow::Result<PathBuf> {
    let wanted = format!("mdbook v{MDBOOK_VERSION}");
    let version_of = |program: &Path| {
        Command::new(program)
            .arg("--version")
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    if version_of(Path::new("mdbook")).as_deref() == Some(wanted.as_str()) {
        return Ok(PathBuf::from("mdbook"));
    }
    let tools = target.join("tools");
    let installed = tools.join("bin/mdbook");
    if version_of(&installed).as_deref() == Some(wanted.as_str()) {
        return Ok(installed);
    }
    eprintln!(
        "xtask: installing mdbook {MDBOOK_VERSION} under {}",
        tools.display()
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["install", "mdbook", "--locked", "--no-default-features"])
        .args([
            "--features",
            "search",
            "--version",
            MDBOOK_VERSION,
            "--root",
        ])
        .arg(&tools)
        .status()
        .context("running cargo install mdbook")?;
    if !status.success() {
        bail!("`cargo install mdbook --version {MDBOOK_VERSION}` failed ({status})");
    }
    Ok(installed)
}

/// Every broken relative link of the rendered book in `out`.
fn check_rendered(out: &Path) -> anyhow::Result<Vec<String>> {
    let mut pages = BTreeMap::new();
    for path in files_under(out)? {
        if path
            .extension()
            .is_some_and(|extension| extension == "html")
        {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            pages.insert(path, text);
        }
    }
    let ids: BTreeMap<&Path, BTreeSet<String>> = pages
        .iter()
        .map(|(path, text)| {
            (
                path.as_path(),
                attribute_values(text, "id").into_iter().collect(),
            )
        })
        .collect();
    let mut broken = Vec::new();
    for (page, text) in &pages {
        // mdBook's own pages (the 404 page, the printable copy) repeat the book's links.
        let name = page
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or("");
        if matches!(name, "404.html" | "print.html" | "toc.html") {
            continue;
        }
        let shown = page.strip_prefix(out).unwrap_or(page).display().to_string();
        for link in attribute_values(text, "href")
            .into_iter()
            .chain(attribute_values(text, "src"))
        {
            let Some((file, fragment)) = relative_target(&link) else {
                continue;
            };
            let target = if file.is_empty() {
                page.clone()
            } else {
                normalize(&page.parent().unwrap_or(out).join(&file))
            };
            if !target.exists() {
                broken.push(format!("{shown}: {link} (no such file)"));
                continue;
            }
            if let Some(fragment) = fragment {
                let known = ids.get(target.as_path());
                if known.is_none_or(|ids| !ids.contains(&fragment)) {
                    broken.push(format!("{shown}: {link} (no such anchor)"));
                }
            }
        }
    }
    Ok(broken)
}

/// Every broken relative link of one Markdown file outside the book.
fn check_markdown(root: &Path, page: &Path) -> anyhow::Result<Vec<String>> {
    let text =
        std::fs::read_to_string(page).with_context(|| format!("reading {}", page.display()))?;
    let shown = page
        .strip_prefix(root)
        .unwrap_or(page)
        .display()
        .to_string();
    let mut broken = Vec::new();
    for link in markdown_links(&text) {
        let Some((file, fragment)) = relative_target(&link) else {
            continue;
        };
        let target = if file.is_empty() {
            page.to_path_buf()
        } else {
            normalize(&page.parent().unwrap_or(root).join(&file))
        };
        if !target.exists() {
            broken.push(format!("{shown}: {link} (no such file)"));
            continue;
        }
        if let Some(fragment) = fragment
            && target
                .extension()
                .is_some_and(|extension| extension == "md")
        {
            let heading_ids = heading_ids(&std::fs::read_to_string(&target)?);
            if !heading_ids.contains(&fragment) {
                broken.push(format!("{shown}: {link} (no such heading)"));
            }
        }
    }
    Ok(broken)
}

/// A link's file part and fragment, or `None` for a link that leaves the tree (a scheme, an
/// absolute path, `//host`) or is empty.
fn relative_target(link: &str) -> Option<(String, Option<String>)> {
    let link = link.trim();
    if link.is_empty()
        || link.starts_with('/')
        || link.starts_with("data:")
        || link.starts_with("javascript:")
        || link
            .split_once(':')
            .is_some_and(|(scheme, _)| !scheme.contains('/') && !scheme.contains('#'))
    {
        return None;
    }
    let (file, fragment) = match link.split_once('#') {
        Some((file, fragment)) => (file, Some(percent_decoded(fragment))),
        None => (link, None),
    };
    let file = file.split_once('?').map_or(file, |(file, _)| file);
    Some((percent_decoded(file), fragment.filter(|f| !f.is_empty())))
}

/// `a/./b/../c` as `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The values of every `name="…"` attribute in an HTML text.
fn attribute_values(html: &str, name: &str) -> Vec<String> {
    let needle = format!(" {name}=\"");
    html.match_indices(needle.as_str())
        .filter_map(|(at, found)| {
            let start = at + found.len();
            let end = html[start..].find('"')?;
            Some(html_unescaped(&html[start..start + end]))
        })
        .collect()
}

/// The targets of the inline links and images of a Markdown text (`[text](target)`), outside
/// code blocks and code spans.
fn markdown_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let prose: String = line
            .split('`')
            .enumerate()
            .filter(|(index, _)| index % 2 == 0)
            .map(|(_, part)| part)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            links.push(target.trim_matches(|c| c == '<' || c == '>').to_owned());
            rest = &after[end..];
        }
    }
    links
}

/// The anchors GitHub and mdBook give a Markdown file's headings: lower case, spaces as `-`,
/// other punctuation dropped.
fn heading_ids(text: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#').trim();
        ids.insert(heading_id(heading));
    }
    ids
}

fn heading_id(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

fn html_unescaped(text: &str) -> String {
    text.replace("&amp;", "&")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
}

fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && let Some(value) = text
                .get(index + 1..index + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(value);
            index += 3;
            continue;
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn files_under(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_that_leave_the_tree_are_not_checked() {
        for link in [
            "https://example.com/x",
            "mailto:a@b",
            "/absolute",
            "//host/x",
            "",
        ] {
            assert_eq!(relative_target(link), None, "{link}");
        }
        assert_eq!(
            relative_target("../api/core.html#search%20terms"),
            Some(("../api/core.html".into(), Some("search terms".into())))
        );
        assert_eq!(
            relative_target("#top"),
            Some((String::new(), Some("top".into())))
        );
    }

    #[test]
    fn markdown_links_skip_code() {
        let text = "See [a](a.md) and `[b](b.md)`.\n```\n[c](c.md)\n```\n![d](img/d.png \"t\")";
        assert_eq!(markdown_links(text), ["a.md", "img/d.png"]);
    }

    #[test]
    fn heading_ids_follow_the_renderers() {
        assert_eq!(
            heading_id("Rate limits (per tenant)"),
            "rate-limits-per-tenant"
        );
        assert_eq!(
            heading_id("`tessera admin` commands"),
            "tessera-admin-commands"
        );
    }

    #[test]
    fn a_missing_anchor_is_broken() {
        let dir = std::env::temp_dir().join(format!("xtask-book-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("a.html"),
            r##"<h1 id="top">A</h1><a href="b.html#there">b</a><a href="#top">t</a><a href="#gone">g</a>"##,
        )
        .unwrap();
        std::fs::write(
            dir.join("b.html"),
            r#"<h2 id="there">B</h2><img src="c.png">"#,
        )
        .unwrap();
        let broken = check_rendered(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(broken.len(), 2, "{broken:?}");
        assert!(broken.iter().any(|line| line.contains("#gone")));
        assert!(broken.iter().any(|line| line.contains("c.png")));
    }
}
