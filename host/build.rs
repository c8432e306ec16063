//! Embeds ferrocm's device code objects: the ones the package carries, the ones
//! `FERROCM_PREBUILT_DIR` names, or built from the device sources (see
//! `ferrocm_device_build::embed` for the rules and the environment variables).

fn main() {
    ferrocm_device_build::embed::run();
}
