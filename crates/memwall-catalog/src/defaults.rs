//! What a design runs when it names no engine: the best-validated profile for the unit on
//! that device, so that every default design carries a cross-validated error band where one
//! exists, and says so where none does.

use memwall_spec::{Backend, DeviceSpec, EngineSpec, GpuVendor};

use crate::error::Result;
use crate::presets::{ENGINES, load_engine};

/// The engine a design gets by default, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct DefaultEngine {
    /// The profile.
    pub engine: EngineSpec,
    /// Why this one (for the output).
    pub why: String,
}

/// The default engine for `unit` on `device`:
///
/// - CPU: `llama.cpp` (its CPU profile is cross-validated on published rows);
/// - GPU: llama.cpp's backend for the GPU's vendor (llama.cpp README, "Supported backends"):
///   Metal on Apple (`llama.cpp`), OpenCL on Adreno (`llama.cpp-opencl`), CUDA on NVIDIA
///   (`llama.cpp-cuda`), Vulkan on any other or unstated GPU (`llama.cpp-vulkan`);
/// - NPU: llama.cpp has no validated NPU profile, so the preset with an NPU profile whose
///   cross-validated 80 % band of measured ÷ predicted is narrowest (`hi / lo`); the generic
///   profile when no preset has one.
pub fn default_engine(device: &DeviceSpec, unit: Backend) -> Result<DefaultEngine> {
    let (name, why) = match unit {
        Backend::Cpu => ("llama.cpp", "the default on the CPU: llama.cpp's CPU backend".to_string()),
        Backend::Gpu => {
            let vendor = device.accelerators.gpu_vendor;
            let (name, backend) = match vendor {
                Some(GpuVendor::Apple) => ("llama.cpp", "Metal"),
                Some(GpuVendor::Qualcomm) => ("llama.cpp-opencl", "OpenCL (Adreno)"),
                Some(GpuVendor::Nvidia) => ("llama.cpp-cuda", "CUDA"),
                _ => ("llama.cpp-vulkan", "Vulkan"),
            };
            let of = match vendor {
                Some(_) => "for this GPU",
                None => "for a GPU whose vendor the device does not state",
            };
            (name, format!("the default on the GPU: llama.cpp's {backend} backend, {of}"))
        }
        Backend::Npu => return best_validated_npu(),
    };
    Ok(DefaultEngine { engine: load_engine(name)?, why })
}

/// The preset whose NPU profile has the narrowest cross-validated band.
fn best_validated_npu() -> Result<DefaultEngine> {
    let mut best: Option<(f64, EngineSpec)> = None;
    for (name, _) in ENGINES {
        let e = load_engine(name)?;
        let Some([lo, hi]) = e.npu.as_ref().and_then(|u| u.error_ratio) else { continue };
        let width = hi / lo;
        if best.as_ref().is_none_or(|(w, _)| width < *w) {
            best = Some((width, e));
        }
    }
    Ok(match best {
        Some((_, engine)) => DefaultEngine {
            why: format!(
                "the default on the NPU: `{}`, the profile with the narrowest cross-validated error there",
                engine.name
            ),
            engine,
        },
        None => DefaultEngine {
            engine: EngineSpec::generic(),
            why: "the default on the NPU: no profile is validated there, so memwall's generic figures".into(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::load_device;

    fn name(device: &str, unit: Backend) -> String {
        default_engine(&load_device(device).unwrap(), unit).unwrap().engine.name
    }

    #[test]
    fn each_unit_gets_llama_cpp_s_backend_for_it() {
        assert_eq!(name("snapdragon-8-gen3-16gb", Backend::Cpu), "llama.cpp");
        assert_eq!(name("apple-m3-max-64gb", Backend::Gpu), "llama.cpp");
        assert_eq!(name("snapdragon-8-gen3-16gb", Backend::Gpu), "llama.cpp-opencl");
        assert_eq!(name("jetson-orin-nano-8gb", Backend::Gpu), "llama.cpp-cuda");
        assert_eq!(name("google-tensor-g3-12gb", Backend::Gpu), "llama.cpp-vulkan");
        let mut d = load_device("apple-m3-max-64gb").unwrap();
        d.accelerators.gpu_vendor = None;
        let e = default_engine(&d, Backend::Gpu).unwrap();
        assert_eq!(e.engine.name, "llama.cpp-vulkan");
        assert!(e.why.contains("does not state"), "{}", e.why);
    }

    #[test]
    fn the_npu_default_is_the_narrowest_validated_band_or_says_there_is_none() {
        let e = default_engine(&load_device("snapdragon-8-gen3-16gb").unwrap(), Backend::Npu).unwrap();
        let bands: Vec<(String, f64)> = ENGINES
            .iter()
            .filter_map(|(n, _)| {
                let e = load_engine(n).unwrap();
                e.npu.and_then(|u| u.error_ratio).map(|[l, h]| (e.name, h / l))
            })
            .collect();
        match e.engine.npu.as_ref().and_then(|u| u.error_ratio) {
            Some([lo, hi]) => assert!(bands.iter().all(|(_, w)| hi / lo <= *w), "{bands:?}"),
            None => {
                assert!(bands.is_empty(), "{bands:?}");
                assert_eq!(e.engine.name, "generic");
                assert!(e.why.contains("no profile is validated"), "{}", e.why);
            }
        }
    }
}
