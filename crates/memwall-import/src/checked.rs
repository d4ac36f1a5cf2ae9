//! The one checked conversion of a number read from a model file into the integer memwall
//! keeps: a `u64` narrowed to `u32`, a product or sum of widths, a float made an integer. Each
//! is refused when it does not fit or exceeds its plausibility bound, with an error that names
//! the field (a config.json path or a GGUF key), the value and the bound; nothing read from a
//! file is truncated, wrapped or saturated on its way into a [`memwall_spec::ModelSpec`].

use std::borrow::Cow;

use memwall_spec::bounds::{MAX_DIM, MAX_EXPERTS, MAX_LAYERS};

use crate::ImportError;

/// The largest value a number may take, and what that limit is (for the message).
#[derive(Debug, Clone)]
pub(crate) struct Bound {
    /// The largest accepted value.
    pub max: u64,
    /// What the limit is: `2^20, the largest model width memwall accepts`.
    pub what: Cow<'static, str>,
}

impl Bound {
    /// Any width of a model ([`MAX_DIM`]).
    pub fn dim() -> Self {
        Self { max: MAX_DIM, what: "2^20, the largest model width memwall accepts".into() }
    }

    /// Layers of a model ([`MAX_LAYERS`]).
    pub fn layers() -> Self {
        Self { max: u64::from(MAX_LAYERS), what: "2^12, the most layers memwall accepts".into() }
    }

    /// Experts of a layer, routed, chosen or shared ([`MAX_EXPERTS`]).
    pub fn experts() -> Self {
        Self { max: u64::from(MAX_EXPERTS), what: "2^16, the most experts per layer memwall accepts".into() }
    }

    /// A count of layers of a model with `n_layers` layers: at most all of them.
    pub fn of_layers(n_layers: u32) -> Self {
        Self { max: u64::from(n_layers), what: format!("the model's {n_layers} layers").into() }
    }

    /// Layers that share another's cache: all but one of `n_layers` (some layer owns a cache).
    pub fn sharing_layers(n_layers: u32) -> Self {
        Self {
            max: u64::from(n_layers.saturating_sub(1)),
            what: format!("all but one of the model's {n_layers} layers, which must own a cache").into(),
        }
    }

    /// An integer written as a float: 2^53, beyond which a float holds no exact integer.
    pub fn exact_float() -> Self {
        Self { max: 1 << 53, what: "2^53, the largest integer a JSON number holds exactly".into() }
    }
}

/// Where numbers are read: a config.json object or a GGUF header. A number that does not fit
/// is refused naming its field as the file spells it.
pub(crate) trait Fields {
    /// The field's full name (`text_config.num_experts_per_tok`, `qwen3moe.expert_count`).
    fn name(&self, k: &str) -> String;

    /// The error refusing field `k`; `what` says why (it follows the field's name).
    fn refuse(&self, k: &str, what: String) -> ImportError;

    /// The checked conversion every other method goes through: `value` (`None` when forming it
    /// overflowed) of field `k`, refused when absent or above `bound`. `shown` is how the
    /// value was formed (`` `expand` × `hidden_size` = 16 × 4096 ``), or empty for the field
    /// itself.
    fn within(&self, k: &str, shown: &str, value: Option<u64>, bound: &Bound) -> Result<u64, ImportError> {
        let limit = format!("{} ({})", bound.max, bound.what);
        match value {
            Some(v) if v <= bound.max => Ok(v),
            Some(v) if shown.is_empty() => Err(self.refuse(k, format!("= {v}: exceeds {limit}"))),
            Some(v) => Err(self.refuse(k, format!("= {v} ({shown}): exceeds {limit}"))),
            None => Err(self.refuse(k, format!("{shown} overflows 64 bits, far beyond {limit}"))),
        }
    }

    /// Field `k`'s `value` as a `T` (`u32`, `usize`, or `u64` only bounded), refused above
    /// `bound`, which `T` must hold.
    fn narrow<T: TryFrom<u64>>(&self, k: &str, value: u64, bound: &Bound) -> Result<T, ImportError> {
        let v = self.within(k, "", Some(value), bound)?;
        T::try_from(v).map_err(|_| self.refuse(k, format!("= {v}: does not fit {}", std::any::type_name::<T>())))
    }

    /// A model's layer count, field `k`: 1 to [`MAX_LAYERS`].
    fn layer_count(&self, k: &str, value: u64) -> Result<u32, ImportError> {
        match self.narrow(k, value, &Bound::layers())? {
            0 => Err(self.refuse(k, "= 0: a model has at least one layer".into())),
            n => Ok(n),
        }
    }

    /// The product of fields (key, value), e.g. a head count by a head width, refused on
    /// overflow or above `bound`; the error is the first field's and names every factor.
    fn product(&self, factors: &[(&str, u64)], bound: &Bound) -> Result<u64, ImportError> {
        self.combine(factors, " × ", u64::checked_mul, 1, bound)
    }

    /// The sum of fields (key, value), e.g. two parts of a head, checked like [`Fields::product`].
    fn sum(&self, terms: &[(&str, u64)], bound: &Bound) -> Result<u64, ImportError> {
        self.combine(terms, " + ", u64::checked_add, 0, bound)
    }

    /// `parts` folded with `op` from `unit`, shown joined by `sign`, then [`Fields::within`].
    fn combine(
        &self,
        parts: &[(&str, u64)],
        sign: &str,
        op: fn(u64, u64) -> Option<u64>,
        unit: u64,
        bound: &Bound,
    ) -> Result<u64, ImportError> {
        let value = parts.iter().try_fold(unit, |acc, (_, v)| op(acc, *v));
        let names: Vec<String> = parts.iter().map(|(k, _)| format!("`{}`", self.name(k))).collect();
        let values: Vec<String> = parts.iter().map(|(_, v)| v.to_string()).collect();
        let shown = format!("{} = {}", names.join(sign), values.join(sign));
        self.within(parts.first().map_or("", |p| p.0), &shown, value, bound)
    }

    /// Field `k`'s float `f` as an integer: refused unless finite, whole, not negative and at
    /// most `bound` (round it first where the file's format truncates).
    fn whole(&self, k: &str, f: f64, bound: &Bound) -> Result<u64, ImportError> {
        if !(f.is_finite() && f.fract() == 0.0 && f >= 0.0) {
            return Err(self.refuse(k, format!("is {f}, expected a non-negative integer")));
        }
        // Exact: a whole float below 2^64 converts without loss; above, `within` refuses it.
        if f < 18_446_744_073_709_551_616.0 {
            self.within(k, "", Some(f as u64), bound)
        } else {
            self.within(k, &format!("= {f}"), None, bound)
        }
    }
}
