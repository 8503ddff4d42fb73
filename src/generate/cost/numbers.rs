//! How the generation cost figures read: rounded to 4 significant digits
//! in files, to 2 for people.

/// `x` to 4 significant digits, so that files stay readable.
pub(crate) fn round(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let digits = 3 - x.abs().log10().floor() as i32;
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

/// `x` to 2 significant digits (at least the units), for people.
pub(crate) fn short(x: f64) -> String {
    if !x.is_finite() {
        return "infinite".to_string();
    }
    if x >= 10.0 || x == 0.0 {
        return format!("{x:.0}");
    }
    let decimals = (1 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.decimals$}")
}
