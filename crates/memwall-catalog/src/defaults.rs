//! What a design runs when it names no engine: the best-validated profile for the unit on
//! that device, so that every default design carries a cross-validated error band where one
//! exists, and says so where none does.

use memwall_spec::class::CpuFamily;
use memwall_spec::{Backend, DeviceSpec, EngineSpec, GpuVendor};

use crate::error::Result;
use crate::presets::load_engine;

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
/// - NPU: on a Qualcomm SoC (an Adreno GPU beside a Hexagon NPU) llama.cpp's Hexagon backend
///   (`llama.cpp-hexagon`, cross-validated on published rows); on any other NPU the generic
///   engine (`generic`: the median of the profiled engines' figures, its band from leaving each
///   engine out), since an NPU engine's figures do not carry across vendors.
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
        Backend::Npu => match device.accelerators.gpu_vendor {
            Some(GpuVendor::Qualcomm) => {
                ("llama.cpp-hexagon", "the default on a Qualcomm NPU: llama.cpp's Hexagon backend".to_string())
            }
            _ => (
                "generic",
                "the default on this NPU: no profile is validated on its vendor's NPU, so memwall's generic \
                 engine (the median of the profiled engines' figures; its band from leaving each engine out)"
                    .to_string(),
            ),
        },
    };
    Ok(DefaultEngine { engine: load_engine(name)?, why })
}

/// The median of `xs` (None when empty).
pub fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    Some(if n % 2 == 1 { xs[n / 2] } else { (xs[n / 2 - 1] + xs[n / 2]) / 2.0 })
}

/// The bandwidth figures a device of CPU family `family` and GPU vendor `vendor` takes when it
/// states none, recomputed from the device presets other than those named in `without`: the
/// medians of the family's presets' `memory.achievable_fraction` and `memory.per_core_gbps`
/// (over every preset when the family has none), and of the vendor's presets'
/// `accelerators.gpu_bandwidth_fraction` (the class default when none states one).
/// [`memwall_spec::class::cpu_defaults`] and [`memwall_spec::class::gpu_bandwidth_fraction`]
/// are these with nothing left out; cross-validation leaves out the device it predicts.
pub fn family_figures(family: CpuFamily, vendor: Option<GpuVendor>, without: &[&str]) -> (f64, f64, f64) {
    let presets: Vec<DeviceSpec> = crate::presets::DEVICES
        .iter()
        .filter(|(n, _)| !without.contains(n))
        .filter_map(|(n, _)| crate::load_device(n).ok())
        .collect();
    let of = |fam: Option<CpuFamily>| {
        let rows: Vec<&DeviceSpec> =
            presets.iter().filter(|d| fam.is_none_or(|f| CpuFamily::of(d.kind, d.os()) == f)).collect();
        let fr = median(rows.iter().filter_map(|d| d.memory.achievable_fraction).collect());
        let pc = median(rows.iter().filter_map(|d| d.memory.per_core_gbps).collect());
        fr.zip(pc)
    };
    let (fr, pc) = of(Some(family)).or_else(|| of(None)).unwrap_or((f64::NAN, f64::NAN));
    let gpu = median(
        presets
            .iter()
            .filter(|d| vendor.is_some() && d.accelerators.gpu_vendor == vendor)
            .filter_map(|d| d.accelerators.gpu_bandwidth_fraction)
            .collect(),
    )
    .unwrap_or(memwall_spec::class::GPU_BANDWIDTH_FRACTION);
    (fr, pc, gpu)
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
    fn the_npu_default_follows_the_vendor_and_carries_a_band() {
        let q = default_engine(&load_device("snapdragon-8-gen3-16gb").unwrap(), Backend::Npu).unwrap();
        assert_eq!(q.engine.name, "llama.cpp-hexagon");
        let other = default_engine(&load_device("google-tensor-g3-12gb").unwrap(), Backend::Npu).unwrap();
        assert_eq!(other.engine.name, "generic");
        assert!(other.why.contains("no profile is validated"), "{}", other.why);
        for e in [q, other] {
            assert!(e.engine.npu.as_ref().and_then(|u| u.error_ratio).is_some(), "{} has no band", e.engine.name);
        }
    }

    #[test]
    fn family_defaults_are_the_medians_of_their_presets() {
        use memwall_spec::class::{cpu_defaults, gpu_bandwidth_fraction};
        for fam in CpuFamily::ALL {
            let (fr, pc, _) = family_figures(fam, None, &[]);
            let d = cpu_defaults(fam);
            assert!((d.achievable_fraction - fr).abs() < 1e-9, "{fam:?}: {} vs {fr}", d.achievable_fraction);
            assert!((d.per_core_gbps - pc).abs() < 1e-9, "{fam:?}: {} vs {pc}", d.per_core_gbps);
        }
        for v in [GpuVendor::Apple, GpuVendor::Qualcomm, GpuVendor::Arm, GpuVendor::Nvidia, GpuVendor::Broadcom] {
            let (_, _, g) = family_figures(CpuFamily::AndroidPhone, Some(v), &[]);
            assert!((gpu_bandwidth_fraction(Some(v)) - g).abs() < 1e-9, "{v:?}: {g}");
        }
        // Leaving a device out moves its family's figure: the M2's 50 GB/s core leaves the
        // Mac median at 60, its 0.59 share moves the median from 0.44 to 0.38.
        let (fr, pc, _) = family_figures(CpuFamily::AppleMac, None, &["apple-m2-16gb"]);
        assert_eq!((fr, pc), (0.38, 60.0));
    }
}
