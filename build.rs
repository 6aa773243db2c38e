//! Links the `supervisor` binary with packed relative relocations (`-z pack-relative-relocs`,
//! DT_RELR) where the machine that builds it can run such a binary.
//!
//! Why: the binary is position-independent, and its ~32 000 relative relocations (a 770 KiB
//! `.rela.dyn` table) are applied by the dynamic loader at every start. DT_RELR packs them into
//! about 10 KiB; a one-test run spends about a fifth less CPU (BENCHMARKS.md, "The fixed cost per
//! test"). A binary linked this way needs glibc 2.36 or later to start (the linker records a
//! `GLIBC_ABI_DT_RELR` dependency), so the flag is only added when the binary is built for the
//! machine it is built on and that machine's glibc is 2.36 or later; anywhere else the link is as
//! before. `BUGATTI_NO_PACKED_RELOCS=1` turns it off.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=BUGATTI_NO_PACKED_RELOCS");
    if std::env::var_os("BUGATTI_NO_PACKED_RELOCS").is_some_and(|v| v != "0" && !v.is_empty()) {
        return;
    }
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    let linux_gnu = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    if !linux_gnu || target != host {
        return;
    }
    if glibc_version().is_some_and(|version| version >= (2, 36)) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// The build machine's glibc as (major, minor), from `getconf GNU_LIBC_VERSION` ("glibc 2.36").
fn glibc_version() -> Option<(u32, u32)> {
    let output = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let version = text.trim().strip_prefix("glibc ")?;
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts
        .next()?
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()?;
    Some((major, minor))
}
