//! Rebuilds the console crate whenever a file of `assets/` changes, is added or is removed:
//! rust-embed reads the folder at compile time, and cargo does not otherwise know to look.

fn main() {
    println!("cargo:rerun-if-changed=assets");
}
