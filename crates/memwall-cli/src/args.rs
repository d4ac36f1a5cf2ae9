//! Value parsers the flags share: text parsed as the experiment files and the bindings parse
//! it, and whole numbers that refuse a leading minus by the flag's name.

use memwall_spec::SpecError;

/// A clap value parser for a type read from text ([`std::str::FromStr`]), whose errors name
/// `field`: the same parsing the experiment files and the Python bindings use.
pub(crate) fn flag<T: std::str::FromStr<Err = SpecError>>(
    field: &'static str,
) -> impl Fn(&str) -> std::result::Result<T, SpecError> + Clone + Send + Sync + 'static {
    move |text| text.parse::<T>().map_err(|e| e.within(field))
}
/// A clap value parser for a whole number (`u32`, `u64`, `usize`). The parser sees a leading
/// minus as a value (see [`crate::parse_args`]), and this refuses it naming the flag, as it refuses
/// fractions and values beyond the type's range, instead of clap's "unexpected argument '-1'".
pub(crate) fn whole<T: TryFrom<u128>>(text: &str) -> std::result::Result<T, String> {
    let t = text.trim();
    if t.starts_with('-') && t[1..].parse::<f64>().is_ok() {
        return Err("must be a whole number >= 0".into());
    }
    let n: u128 = t.parse().map_err(|_| format!("expected a whole number >= 0, not `{t}`"))?;
    T::try_from(n).map_err(|_| format!("exceeds {}", max_of::<T>()))
}

/// The largest value of an unsigned integer type, for messages.
fn max_of<T: TryFrom<u128>>() -> u128 {
    // The largest power of two below 2^128 that T holds, minus one, by halving.
    let mut hi: u128 = u128::MAX;
    while T::try_from(hi).is_err() {
        hi >>= 1;
    }
    hi
}
