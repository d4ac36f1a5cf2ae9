//! SIMD dot products chosen at run time by CPU feature detection (never by compiling for
//! the local CPU): the paths ([`Isa`]) and their kernels, one module per instruction set.
//! Each path is property-tested against [`crate::dot::scalar`].

#[cfg(target_arch = "x86_64")]
pub mod avx2;

#[cfg(target_arch = "x86_64")]
pub mod avx512;

#[cfg(target_arch = "aarch64")]
pub mod neon;

/// An instruction-set path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// The scalar reference (every CPU).
    Scalar,
    /// x86-64 AVX2 + FMA + F16C.
    Avx2,
    /// x86-64 AVX-512 F/BW/VL with VNNI (and the AVX2, FMA and F16C it extends).
    Avx512,
    /// AArch64 NEON (baseline; no optional extension).
    Neon,
    /// AArch64 NEON with the dot-product extension (`sdot`, Armv8.2 `dotprod`).
    NeonDot,
}

impl Isa {
    /// Every path, the scalar reference first (tests and benchmarks filter it by
    /// [`Isa::supported`]).
    pub const ALL: [Isa; 5] = [Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Neon, Isa::NeonDot];

    /// The best path this CPU supports.
    pub fn best() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if avx512::available() {
            return Isa::Avx512;
        }
        #[cfg(target_arch = "x86_64")]
        if avx2::available() {
            return Isa::Avx2;
        }
        #[cfg(target_arch = "aarch64")]
        return if neon::dotprod_available() { Isa::NeonDot } else { Isa::Neon };
        #[allow(unreachable_code)]
        Isa::Scalar
    }

    /// Whether this CPU can run the path.
    pub fn supported(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => avx2::available(),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => avx512::available(),
            #[cfg(not(target_arch = "x86_64"))]
            Isa::Avx2 | Isa::Avx512 => false,
            Isa::Neon => cfg!(target_arch = "aarch64"),
            #[cfg(target_arch = "aarch64")]
            Isa::NeonDot => neon::dotprod_available(),
            #[cfg(not(target_arch = "aarch64"))]
            Isa::NeonDot => false,
        }
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Neon => "neon",
            Isa::NeonDot => "neon-dotprod",
        }
    }
}
