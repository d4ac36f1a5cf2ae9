//! One-token state updates of the recurrent layers: a Mamba-1 selective scan and a gated
//! linear-attention (delta rule) state. Memory per layer is fixed: the state does not grow
//! with the context.

use crate::KernelError;

/// Mamba-1 layer state for one sequence: the causal-convolution window and the SSM state.
#[derive(Debug, Clone)]
pub struct MambaState {
    d_inner: usize,
    d_state: usize,
    d_conv: usize,
    /// Last `d_conv − 1` inputs per channel, oldest first (`(d_conv − 1) × d_inner`).
    pub conv: Vec<f32>,
    /// `d_inner × d_state`.
    pub h: Vec<f32>,
}

/// Per-layer parameters of the selective scan (already projected per token where noted).
#[derive(Debug, Clone)]
pub struct MambaParams {
    /// Convolution weights, `d_inner × d_conv`.
    pub conv_w: Vec<f32>,
    /// Convolution bias, `d_inner`.
    pub conv_b: Vec<f32>,
    /// `A = −exp(A_log)`, `d_inner × d_state`.
    pub a: Vec<f32>,
    /// Skip connection `D`, `d_inner`.
    pub d: Vec<f32>,
}

fn softplus(x: f32) -> f32 {
    if x > 20.0 { x } else { x.exp().ln_1p() }
}

fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

impl MambaState {
    /// A zero state.
    pub fn new(d_inner: usize, d_state: usize, d_conv: usize) -> Self {
        MambaState {
            d_inner,
            d_state,
            d_conv,
            conv: vec![0.0; (d_conv - 1) * d_inner],
            h: vec![0.0; d_inner * d_state],
        }
    }

    /// Bytes of the state, `((d_conv − 1) × d_inner + d_inner × d_state) × 4`.
    pub fn bytes(&self) -> usize {
        (self.conv.len() + self.h.len()) * 4
    }

    /// One token: `x` (the in-projection's first half, `d_inner`), `z` (the gate half),
    /// `dt` (Δ before softplus, `d_inner`), `b` and `c` (`d_state`), writing `y` (`d_inner`).
    ///
    /// `u = silu(conv(x))`, `Δ = softplus(dt)`, `h ← exp(Δ A) h + Δ B u`,
    /// `y = (C·h + D u) × silu(z)`.
    #[allow(clippy::too_many_arguments)]
    pub fn step(
        &mut self,
        p: &MambaParams,
        x: &[f32],
        z: &[f32],
        dt: &[f32],
        b: &[f32],
        c: &[f32],
        y: &mut [f32],
    ) -> Result<(), KernelError> {
        let di = self.d_inner;
        let mut u = vec![0f32; di];
        self.convolve(p, x, &mut u)?;
        self.scan(p, &u, z, dt, b, c, y)
    }

    /// The causal convolution of one token: `u = silu(conv_b + Σ_k conv_w[k] × window[k])`
    /// over the last `d_conv − 1` inputs and `x`, then `x` joins the window. In Mamba, the
    /// projections giving Δ, B and C are taken of this `u`.
    pub fn convolve(&mut self, p: &MambaParams, x: &[f32], u: &mut [f32]) -> Result<(), KernelError> {
        let (di, dc) = (self.d_inner, self.d_conv);
        for (what, len, want) in [
            ("x", x.len(), di),
            ("u", u.len(), di),
            ("conv_w", p.conv_w.len(), di * dc),
            ("conv_b", p.conv_b.len(), di),
        ] {
            if len != want {
                return Err(KernelError::Shape { what, len, expected: want });
            }
        }
        for ch in 0..di {
            let w = &p.conv_w[ch * dc..(ch + 1) * dc];
            let mut acc = p.conv_b[ch];
            for (k, wk) in w[..dc - 1].iter().enumerate() {
                acc += wk * self.conv[k * di + ch];
            }
            acc += w[dc - 1] * x[ch];
            for k in 0..dc.saturating_sub(2) {
                self.conv[k * di + ch] = self.conv[(k + 1) * di + ch];
            }
            if dc > 1 {
                self.conv[(dc - 2) * di + ch] = x[ch];
            }
            u[ch] = silu(acc);
        }
        Ok(())
    }

    /// The selective scan of one token on the convolved input `u`: `Δ = softplus(dt)`,
    /// `h ← exp(Δ A) h + Δ B u`, `y = (C·h + D u) × silu(z)`.
    #[allow(clippy::too_many_arguments)]
    pub fn scan(
        &mut self,
        p: &MambaParams,
        u: &[f32],
        z: &[f32],
        dt: &[f32],
        b: &[f32],
        c: &[f32],
        y: &mut [f32],
    ) -> Result<(), KernelError> {
        self.check(p, u, z, dt, b, c, y)?;
        let ds = self.d_state;
        scan_channels(p, ds, 0, &mut self.h, u, z, dt, b, c, y);
        Ok(())
    }

    /// [`MambaState::scan`] with the channels split over `pool`'s threads (they are
    /// independent; each task owns its channels' state and outputs).
    #[allow(clippy::too_many_arguments)]
    pub fn scan_pool(
        &mut self,
        p: &MambaParams,
        u: &[f32],
        z: &[f32],
        dt: &[f32],
        b: &[f32],
        c: &[f32],
        y: &mut [f32],
        pool: &crate::pool::SpinPool,
    ) -> Result<(), KernelError> {
        let (di, ds) = (self.d_inner, self.d_state);
        if pool.threads() == 1 {
            return self.scan(p, u, z, dt, b, c, y);
        }
        self.check(p, u, z, dt, b, c, y)?;
        let chunk = di.div_ceil(pool.threads()).max(1);
        let parts: Vec<std::sync::Mutex<(&mut [f32], &mut [f32])>> =
            self.h.chunks_mut(chunk * ds).zip(y.chunks_mut(chunk)).map(std::sync::Mutex::new).collect();
        pool.run(parts.len(), &|i| {
            let mut g = parts[i].lock().unwrap_or_else(|e| e.into_inner());
            let (h, y) = &mut *g;
            scan_channels(p, ds, i * chunk, h, u, z, dt, b, c, y);
        });
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn check(
        &self,
        p: &MambaParams,
        u: &[f32],
        z: &[f32],
        dt: &[f32],
        b: &[f32],
        c: &[f32],
        y: &[f32],
    ) -> Result<(), KernelError> {
        let (di, ds) = (self.d_inner, self.d_state);
        for (what, len, want) in [
            ("u", u.len(), di),
            ("z", z.len(), di),
            ("dt", dt.len(), di),
            ("b", b.len(), ds),
            ("c", c.len(), ds),
            ("y", y.len(), di),
            ("a", p.a.len(), di * ds),
            ("d", p.d.len(), di),
        ] {
            if len != want {
                return Err(KernelError::Shape { what, len, expected: want });
            }
        }
        Ok(())
    }
}

/// The scan of channels `first..first + y.len()` (`h` holds their state, `d_state` each).
#[allow(clippy::too_many_arguments)]
fn scan_channels(
    p: &MambaParams,
    ds: usize,
    first: usize,
    h: &mut [f32],
    u: &[f32],
    z: &[f32],
    dt: &[f32],
    b: &[f32],
    c: &[f32],
    y: &mut [f32],
) {
    for (i, yc) in y.iter_mut().enumerate() {
        let ch = first + i;
        let delta = softplus(dt[ch]);
        let h = &mut h[i * ds..(i + 1) * ds];
        let a = &p.a[ch * ds..(ch + 1) * ds];
        let mut out = 0f32;
        for n in 0..ds {
            h[n] = (delta * a[n]).exp() * h[n] + delta * b[n] * u[ch];
            out += c[n] * h[n];
        }
        *yc = (out + p.d[ch] * u[ch]) * silu(z[ch]);
    }
}

/// Gated delta-rule linear-attention state for one head: `S` is `key_dim × value_dim`.
#[derive(Debug, Clone)]
pub struct DeltaState {
    key_dim: usize,
    value_dim: usize,
    /// The state matrix, row-major `key_dim × value_dim`.
    pub s: Vec<f32>,
}

impl DeltaState {
    /// A zero state.
    pub fn new(key_dim: usize, value_dim: usize) -> Self {
        DeltaState { key_dim, value_dim, s: vec![0.0; key_dim * value_dim] }
    }

    /// One token: `S ← α S + β k (v − α Sᵀk)ᵀ`, i.e. `α (I − β k kᵀ) S + β k vᵀ` (decay `α`,
    /// write strength `β`, unit-norm `k`),
    /// then `o = Sᵀ q`.
    #[allow(clippy::too_many_arguments)]
    pub fn step(
        &mut self,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        alpha: f32,
        beta: f32,
        o: &mut [f32],
    ) -> Result<(), KernelError> {
        let (dk, dv) = (self.key_dim, self.value_dim);
        for (what, len, want) in [("q", q.len(), dk), ("k", k.len(), dk), ("v", v.len(), dv), ("o", o.len(), dv)] {
            if len != want {
                return Err(KernelError::Shape { what, len, expected: want });
            }
        }
        let mut pred = vec![0f32; dv];
        for (row, ki) in self.s.chunks_exact(dv).zip(k) {
            for (p, s) in pred.iter_mut().zip(row) {
                *p += s * ki;
            }
        }
        for (row, ki) in self.s.chunks_exact_mut(dv).zip(k) {
            for ((s, vj), pj) in row.iter_mut().zip(v).zip(&pred) {
                *s = alpha * *s + beta * ki * (vj - alpha * pj);
            }
        }
        o.fill(0.0);
        for (row, qi) in self.s.chunks_exact(dv).zip(q) {
            for (oj, s) in o.iter_mut().zip(row) {
                *oj += s * qi;
            }
        }
        Ok(())
    }
}
