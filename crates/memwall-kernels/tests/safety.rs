//! Safe public functions that reach SIMD code check what that code relies on: a row of whole
//! blocks, as many weights as activations, activations of the format's kind. Each call here
//! would read out of bounds or misinterpret memory without those checks; now each is an error
//! naming what is wrong. (The same cases run on every path the CPU has, scalar included.)

use memwall_kernels::acts::{ActKind, Acts};
use memwall_kernels::dot::{Kernel, check_row, scalar};
use memwall_kernels::gemv::{QMatrix, gemv};
use memwall_kernels::kv::attend_f32;
use memwall_kernels::pool::SpinPool;
use memwall_kernels::simd::Isa;
use memwall_kernels::{KernelError, quantize};
use memwall_spec::GgmlType;

fn ramp(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i % 17) as f32 - 8.0) / 8.0).collect()
}

fn paths() -> Vec<Isa> {
    Isa::ALL.into_iter().filter(|i| i.supported()).collect()
}

#[test]
fn a_short_row_is_refused_not_read_past() {
    for isa in paths() {
        for t in [GgmlType::Q4_K, GgmlType::Q8_0, GgmlType::TQ1_0, GgmlType::F16, GgmlType::F32] {
            let k = Kernel::with_isa(t, isa).unwrap();
            let n = 512;
            let w = quantize(t, &ramp(n)).unwrap();
            let a = k.prepare(&ramp(n)).unwrap();
            // Half a row: a SIMD loop over `a`'s blocks would read the missing half.
            let err = k.dot(&w[..w.len() / 2], &a).unwrap_err();
            assert!(
                matches!(err, KernelError::Shape { what: "activations", len: 512, expected: 256 }),
                "{t} {isa:?}: {err}"
            );
            // A row that ends inside a block.
            if t.type_size() > 4 {
                let err = k.dot(&w[..w.len() - 1], &a).unwrap_err();
                assert!(matches!(err, KernelError::ByteLength { .. }), "{t}: {err}");
            }
            // Activations longer than the row.
            let long = k.prepare(&ramp(2 * n)).unwrap();
            assert!(k.dot(&w, &long).is_err(), "{t} {isa:?}");
            // The matching pair still works.
            assert!(k.dot(&w, &a).unwrap().is_finite());
        }
    }
}

#[test]
fn activations_of_the_wrong_kind_are_refused() {
    let w = quantize(GgmlType::Q4_K, &ramp(256)).unwrap();
    for isa in paths() {
        let k = Kernel::with_isa(GgmlType::Q4_K, isa).unwrap();
        // Q8_0 activations have the right length but 32-blocks: the Q4_K kernel reads 256-blocks.
        let q8_0 = Acts::new(ActKind::Q8_0, &ramp(256)).unwrap();
        let err = k.dot(&w, &q8_0).unwrap_err();
        assert_eq!(err, KernelError::Activations { format: "q4_K", expected: ActKind::Q8K, got: ActKind::Q8_0 });
        assert!(err.to_string().contains("q4_K rows dot against Q8K"), "{err}");
        let f = Acts::F32(ramp(256));
        assert!(k.dot(&w, &f).is_err());
    }
    // The scalar reference checks the same way.
    let q8_0 = Acts::new(ActKind::Q8_0, &ramp(256)).unwrap();
    assert!(scalar::dot(GgmlType::Q4_K, &w, &q8_0).is_err());
    assert!(check_row(GgmlType::Q4_K, w.len(), &q8_0).is_err());
}

#[test]
fn activations_must_be_whole_finite_blocks() {
    assert!(matches!(Acts::new(ActKind::Q8K, &ramp(300)), Err(KernelError::RowLength { len: 300, block: 256, .. })));
    assert!(matches!(Acts::new(ActKind::Q8_0, &ramp(33)), Err(KernelError::RowLength { len: 33, block: 32, .. })));
    let mut x = ramp(64);
    x[40] = f32::NAN;
    assert!(matches!(Acts::new(ActKind::Q8_0, &x), Err(KernelError::NonFinite { index: 40, .. })));
    let k = Kernel::new(GgmlType::Q4_0).unwrap();
    assert!(k.prepare(&ramp(31)).is_err());
}

#[test]
fn dot_rows_checks_the_buffer_once() {
    let t = GgmlType::Q8_0;
    let w = quantize(t, &ramp(4 * 64)).unwrap();
    let row = w.len() / 4;
    for isa in paths() {
        let k = Kernel::with_isa(t, isa).unwrap();
        let a = k.prepare(&ramp(64)).unwrap();
        let mut y = vec![0f32; 4];
        k.dot_rows(&w, row, &a, &mut y).unwrap();
        for (r, &v) in y.iter().enumerate() {
            assert_eq!(v, k.dot(&w[r * row..(r + 1) * row], &a).unwrap());
        }
        // Five outputs for four rows, a ragged buffer, a row length that does not match `a`.
        assert!(k.dot_rows(&w, row, &a, &mut [0f32; 5]).is_err());
        assert!(k.dot_rows(&w[..w.len() - 3], row, &a, &mut y).is_err());
        assert!(k.dot_rows(&w, row / 2, &a, &mut [0f32; 8]).is_err());
    }
}

#[test]
fn gemv_and_reference_attention_refuse_bad_shapes() {
    let t = GgmlType::Q4_0;
    let w = quantize(t, &ramp(2 * 64)).unwrap();
    let m = QMatrix::new(t, 2, 64, &w).unwrap();
    let k = Kernel::new(t).unwrap();
    let mut y = vec![0f32; 2];
    assert!(gemv(&k, &m, &ramp(32), &mut y).is_err());
    assert!(gemv(&k, &m, &ramp(64), &mut [0f32; 3]).is_err());
    let other = Kernel::new(GgmlType::Q8_0).unwrap();
    assert!(gemv(&other, &m, &ramp(64), &mut y).is_err());
    // attend_f32: zero KV heads, heads that do not group, ragged K/V.
    let (q, kv) = (ramp(4 * 8), ramp(3 * 2 * 8));
    assert!(attend_f32(&q, &kv, &kv, 4, 0, 8).is_err());
    assert!(attend_f32(&q, &kv, &kv, 4, 3, 8).is_err());
    assert!(attend_f32(&q, &kv[..40], &kv[..40], 4, 2, 8).is_err());
    assert_eq!(attend_f32(&q, &kv, &kv, 4, 2, 8).unwrap().len(), 32);
}

#[test]
fn a_panicking_task_is_reraised_on_the_caller_and_the_pool_survives() {
    let pool = SpinPool::new(2);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.run(64, &|i| {
            if i == 37 {
                panic!("task 37");
            }
        })
    }));
    let payload = r.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"task 37"));
    // The pool still runs jobs afterwards (no worker died holding the job, no count is stuck).
    let hits = std::sync::atomic::AtomicUsize::new(0);
    pool.run(100, &|_| {
        hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    });
    assert_eq!(hits.into_inner(), 100);
}
