//! Write quantization fixtures for the cross-implementation test against the `gguf` Python
//! package (tests/python/test_gguf_compat.py): for every supported ggml type, the f32 input,
//! memwall's quantized blocks and memwall's dequantization.
//!
//! Usage: `cargo run -p memwall-kernels --example gguf_fixtures -- OUT_DIR`

use std::path::PathBuf;

use memwall_kernels::formats::SUPPORTED;
use memwall_kernels::{dequantize, quantize};
use rand::SeedableRng;
use rand_distr::{Distribution, Normal, Uniform};

fn main() {
    let out = PathBuf::from(std::env::args().nth(1).expect("usage: gguf_fixtures OUT_DIR"));
    std::fs::create_dir_all(&out).expect("create the output directory");
    let mut rng = rand::rngs::StdRng::seed_from_u64(20261202);
    let normal = Normal::new(0.0f32, 1.0).unwrap();
    let scale = Uniform::new(0.01f32, 4.0).unwrap();
    // 64 blocks of 256 weights, each block with its own magnitude; block 3 is all zeros and
    // block 5 holds a single outlier, the edge cases of the scale searches.
    let n = 256 * 64;
    let mut x = vec![0f32; n];
    for (b, block) in x.chunks_mut(256).enumerate() {
        let s = scale.sample(&mut rng);
        for v in block.iter_mut() {
            *v = match b {
                3 => 0.0,
                5 => 0.001 * normal.sample(&mut rng),
                _ => s * normal.sample(&mut rng),
            };
        }
        if b == 5 {
            block[17] = 9.0;
        }
    }
    let bytes = |v: &[f32]| v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
    for &t in SUPPORTED {
        let q = quantize(t, &x).expect("quantize");
        let y = dequantize(t, &q, n).expect("dequantize");
        std::fs::write(out.join(format!("{}.in.f32", t.name())), bytes(&x)).unwrap();
        std::fs::write(out.join(format!("{}.q", t.name())), &q).unwrap();
        std::fs::write(out.join(format!("{}.out.f32", t.name())), bytes(&y)).unwrap();
    }
    println!("wrote fixtures for {} types to {}", SUPPORTED.len(), out.display());
}
