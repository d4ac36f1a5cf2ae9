//! The one error type of the spec crate: every variant names the offending field and value.

/// An invalid, unknown or unparsable specification value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// A value is present but impossible (zero layers, top-k above the expert count, NaN, ...).
    #[error("invalid `{field}` = {value}: {reason}")]
    Invalid {
        /// Dotted path of the field, e.g. `model.n_kv_heads`.
        field: String,
        /// The offending value as written.
        value: String,
        /// Why it is impossible.
        reason: String,
    },
    /// A name that is not in the catalog (format, preset, tensor class, ...).
    #[error("unknown {what} `{value}`{}{hint}", for_field(field))]
    Unknown {
        /// Dotted path of the field.
        field: String,
        /// What kind of name was expected.
        what: &'static str,
        /// The name as written.
        value: String,
        /// Extra help, e.g. the list of valid names (starts with `; `).
        hint: String,
    },
    /// A value of the wrong type or shape at a known place (`sim.background[0].bytes`).
    #[error("`{field}`: {message}")]
    Field {
        /// Dotted path of the field, with array indices.
        field: String,
        /// The parser's message.
        message: String,
    },
    /// The text could not be parsed at all (TOML syntax, wrong types).
    #[error("cannot parse {origin}: {message}")]
    Parse {
        /// Where the text came from (a file name or a description).
        origin: String,
        /// The parser's message, which names the key and line.
        message: String,
    },
}

fn for_field(field: &str) -> String {
    if field.is_empty() { String::new() } else { format!(" for `{field}`") }
}

impl SpecError {
    /// The dotted path of the field the error concerns, when it names one.
    pub fn field(&self) -> Option<&str> {
        match self {
            SpecError::Invalid { field, .. } | SpecError::Unknown { field, .. } | SpecError::Field { field, .. } => {
                Some(field).filter(|f| !f.is_empty()).map(String::as_str)
            }
            SpecError::Parse { .. } => None,
        }
    }

    /// Shorthand for [`SpecError::Invalid`].
    pub fn invalid(field: impl Into<String>, value: impl ToString, reason: impl Into<String>) -> Self {
        SpecError::Invalid { field: field.into(), value: value.to_string(), reason: reason.into() }
    }

    /// Shorthand for [`SpecError::Unknown`] that suggests the `candidates` closest to `value`
    /// ([`crate::suggest::did_you_mean`]) before the rest of the `hint`.
    pub fn unknown<'a>(
        field: impl Into<String>,
        what: &'static str,
        value: impl Into<String>,
        candidates: impl IntoIterator<Item = &'a str>,
        hint: impl Into<String>,
    ) -> Self {
        let value = value.into();
        let close = crate::suggest::did_you_mean(value.trim(), candidates);
        let hint = hint.into();
        // "; did you mean `x`? presets: …" rather than "…?; presets: …".
        let rest = if close.is_empty() { hint } else { hint.strip_prefix(';').map_or(hint.clone(), str::to_string) };
        SpecError::Unknown { field: field.into(), what, value, hint: format!("{close}{rest}") }
    }

    /// Prefix the field path with `prefix.` (used when a spec is nested in a scenario).
    pub fn within(self, prefix: &str) -> Self {
        let join = |f: String| if f.is_empty() { prefix.to_string() } else { format!("{prefix}.{f}") };
        match self {
            SpecError::Invalid { field, value, reason } => SpecError::Invalid { field: join(field), value, reason },
            SpecError::Unknown { field, what, value, hint } => {
                SpecError::Unknown { field: join(field), what, value, hint }
            }
            SpecError::Field { field, message } => SpecError::Field { field: join(field), message },
            other => other,
        }
    }
}

/// Result alias of the spec crate.
pub type Result<T, E = SpecError> = std::result::Result<T, E>;

/// Check that a float is finite and strictly positive.
pub fn positive(field: &str, value: f64) -> Result<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(SpecError::invalid(field, value, "must be a finite number > 0"))
    }
}

/// Check that a float is finite and not negative.
pub fn non_negative(field: &str, value: f64) -> Result<()> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(SpecError::invalid(field, value, "must be a finite number >= 0"))
    }
}

/// Check that a float lies in `(0, 1]`.
pub fn fraction(field: &str, value: f64) -> Result<()> {
    within(field, value, 1.0, || "must be a fraction in (0, 1]".into())
}

/// Check that a float lies in `(0, max]`.
pub fn positive_at_most(field: &str, value: f64, max: f64) -> Result<()> {
    within(field, value, max, || format!("must be in (0, {max}]"))
}

/// `value` in `(0, max]`, else an error naming `field` with `why`.
fn within(field: &str, value: f64, max: f64, why: impl FnOnce() -> String) -> Result<()> {
    if value.is_finite() && value > 0.0 && value <= max { Ok(()) } else { Err(SpecError::invalid(field, value, why())) }
}

/// Check that an integer is not zero.
pub fn nonzero(field: &str, value: u64) -> Result<()> {
    if value > 0 { Ok(()) } else { Err(SpecError::invalid(field, value, "must be > 0")) }
}
