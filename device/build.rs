//! Tells the crates that depend on this one where its sources are: `ferrocm`'s build script
//! reads `DEP_FERROCM_DEVICE_DIR` (from `links = "ferrocm_device"`) to check that prebuilt code
//! objects were built from exactly these sources, and to build them from source when asked. It
//! works the same in a checkout (`device/`) and for a package unpacked from a registry.

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo::metadata=dir={dir}");
    println!("cargo::rerun-if-changed=build.rs");
}
