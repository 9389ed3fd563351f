//! Axis ranges and tick marks computed here instead of by plotters.
//!
//! plotters' own tick searches loop until a count condition holds, and some ranges never
//! meet it. The hang seen in the report: on a log axis plotters counts the powers in the
//! range as `ln(end / start) / ln(base)`; with a subnormal start (an x of 1e-320 next to
//! an x of 1e-11) `end / start` overflows to infinity, the count saturates to `usize::MAX`,
//! and its `while max_points < count / n { n += 1 }` runs about 1e18 times. Its linear
//! search has the same shape: it divides the step by ten until more ticks than asked fit,
//! which never happens on an infinite range or once the step underflows to 0. So every
//! `f64` axis gets its ticks from here, through [`TickedAxis`], and plotters never searches:
//!
//! - [`clean_value`] makes every value drawable: finite, within ±[`VALUE_MAX`], and 0
//!   below [`VALUE_MIN`] in magnitude, so every range is made of normal floats.
//! - [`axis_range`] widens a range too narrow to hold distinct ticks.
//! - [`linear_ticks`] and [`log_ticks`] are bounded loops: at most [`TICKS_MAX`] + 1 bold
//!   ticks and [`LIGHT_MAX`] light ones, whatever the range.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use std::ops::Range;

/// The largest magnitude drawn. Beyond it a value is cut to it (bars, latencies) or left
/// out (points): no measured figure comes near it, and with it every padded range stays
/// finite.
pub(crate) const VALUE_MAX: f64 = 1e15;
/// The smallest non-zero magnitude drawn: smaller ones are drawn as 0 (a log axis's floor
/// is above it). No figure a report shows is this small, and above it every step between
/// ticks is a normal float.
pub(crate) const VALUE_MIN: f64 = 1e-9;
/// The most labelled ticks on an axis.
pub(crate) const TICKS_MAX: usize = 10;
/// The most light (unlabelled grid) lines on an axis.
pub(crate) const LIGHT_MAX: usize = 60;

/// A value as drawn: `None` when it is not a number or infinite, else cut to
/// ±[`VALUE_MAX`] and 0 below [`VALUE_MIN`] (-0 is 0).
pub(crate) fn clean_value(value: f64) -> Option<f64> {
    if !value.is_finite() {
        return None;
    }
    if value.abs() < VALUE_MIN {
        return Some(0.0);
    }
    Some(value.clamp(-VALUE_MAX, VALUE_MAX))
}

/// A range that holds distinct ticks, from the lowest and highest value drawn (cleaned):
/// a range narrower than a millionth of its magnitude (or a subnormal one) is widened (1e14 + 0.005 == 1e14
/// in ticks), a log range by halving and doubling, a linear one by a tenth of its magnitude
/// (at least 1). A log range must be positive: its low end is kept at [`VALUE_MIN`] or more.
pub(crate) fn axis_range(low: f64, high: f64, log: bool) -> (f64, f64) {
    let (low, high) = if low <= high {
        (low, high)
    } else {
        (high, low)
    };
    let (low, high) = if log {
        (low.max(VALUE_MIN), high.max(VALUE_MIN))
    } else {
        (low, high)
    };
    let magnitude = low.abs().max(high.abs());
    // A millionth of the magnitude, and never less than a millionth of VALUE_MIN: a
    // subnormal span would give a step of 0.
    if high - low > (magnitude * 1e-6).max(VALUE_MIN * 1e-6) {
        return (low, high);
    }
    if log {
        (low / 2.0, high * 2.0)
    } else {
        let pad = (magnitude * 0.1).max(1.0);
        (low - pad, high + pad)
    }
}

/// Labelled and light ticks of an axis.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Ticks {
    /// Labelled, with a grid line.
    pub(crate) bold: Vec<f64>,
    /// Grid lines only.
    pub(crate) light: Vec<f64>,
}

/// Multiples of a 1-2-5 step in `[low, high]`: at most [`TICKS_MAX`] + 1 bold ticks (a step of
/// a fifth between them for the light lines). `low < high`, both within a few
/// [`VALUE_MAX`] (from [`axis_range`]).
pub(crate) fn linear_ticks(low: f64, high: f64) -> Ticks {
    let span = high - low;
    if !(span > 0.0 && span.is_finite()) {
        return Ticks {
            bold: vec![],
            light: vec![],
        };
    }
    let decade = 10f64.powf((span / TICKS_MAX as f64).log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * decade)
        .find(|step| span / step <= TICKS_MAX as f64)
        .unwrap_or(10.0 * decade);
    Ticks {
        bold: multiples(low, high, step, TICKS_MAX + 1),
        light: multiples(low, high, step / 5.0, LIGHT_MAX),
    }
}

/// The multiples of `step` in `[low, high]`, at most `most` of them.
fn multiples(low: f64, high: f64, step: f64, most: usize) -> Vec<f64> {
    let first = (low / step).ceil();
    (0..most)
        .map(|i| (first + i as f64) * step)
        // -0.0 + 0.0 is 0.0: an axis never reads "-0".
        .map(|v| v + 0.0)
        // Rounding can put the first multiple just below `low` (5e-324 / 1e8 is 0).
        .skip_while(|v| *v < low)
        .take_while(|v| *v <= high)
        .collect()
}

/// Powers of `base` in `[low, high]`, with 2× and 5× of each power too when `base` is 10
/// and there is room; thinned to at most [`TICKS_MAX`] by keeping every k-th power. Light
/// lines at 1× to 9× of each power of 10. `0 < low < high`.
pub(crate) fn log_ticks(low: f64, high: f64, base: f64) -> Ticks {
    if !(low > 0.0 && high > low && high.is_finite() && base > 1.0) {
        return Ticks {
            bold: vec![],
            light: vec![],
        };
    }
    // Exponents of a range within [VALUE_MIN, VALUE_MAX] number a few dozen (base 10) or
    // about a hundred (base 2): every loop below is bounded by them.
    let exponent_low = (low.ln() / base.ln()).floor() as i32;
    let exponent_high = (high.ln() / base.ln()).ceil() as i32;
    let exponents: Vec<i32> = (exponent_low..=exponent_high).take(400).collect();
    let within = |v: &f64| *v >= low && *v <= high;
    let powers: Vec<f64> = exponents
        .iter()
        .map(|e| base.powi(*e))
        .filter(within)
        .collect();
    let decimal = (base - 10.0).abs() < f64::EPSILON;
    let with_multiples: Vec<f64> = if decimal {
        exponents
            .iter()
            .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * base.powi(*e)))
            .filter(within)
            .collect()
    } else {
        powers.clone()
    };
    let bold = if with_multiples.len() <= TICKS_MAX {
        with_multiples
    } else {
        let every = powers.len().div_ceil(TICKS_MAX).max(1);
        powers.into_iter().step_by(every).collect()
    };
    let light: Vec<f64> = if decimal {
        exponents
            .iter()
            .flat_map(|e| (1..10).map(move |m| f64::from(m) * 10f64.powi(*e)))
            .filter(within)
            .collect()
    } else {
        vec![]
    };
    let light = if light.len() <= LIGHT_MAX {
        light
    } else {
        vec![]
    };
    Ticks { bold, light }
}

/// A plotters axis (linear or log) whose ticks are given, so plotters never searches for
/// them. Like plotters' `WithKeyPoints`, but its values format by default (the charts
/// give their own label formatters), which `WithKeyPoints` over an `f64` axis does not.
pub(crate) struct TickedAxis<R> {
    inner: R,
    ticks: Ticks,
}

impl<R: Ranged<ValueType = f64>> TickedAxis<R> {
    pub(crate) fn new(inner: R, ticks: Ticks) -> TickedAxis<R> {
        TickedAxis { inner, ticks }
    }
}

impl<R: Ranged<ValueType = f64>> Ranged for TickedAxis<R> {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // plotters asks for bold points (labels, bold grid) and for light ones (the light
        // grid) separately.
        if hint.weight().allow_light_points() {
            self.ticks.light.clone()
        } else {
            self.ticks.bold.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.inner.range()
    }

    fn axis_pixel_range(&self, limit: (i32, i32)) -> Range<i32> {
        self.inner.axis_pixel_range(limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_ticks_are_round_steps() {
        assert_eq!(
            linear_ticks(0.0, 100.0).bold,
            vec![
                0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0
            ]
        );
        assert_eq!(linear_ticks(-1.0, 1.0).bold.len(), 11);
        assert_eq!(
            linear_ticks(3.0, 18.0).bold,
            vec![4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0]
        );
        assert_eq!(linear_ticks(0.0, 1e15).bold.len(), 11);
        assert_eq!(linear_ticks(5.0, 5.0).bold, Vec::<f64>::new());
    }

    #[test]
    fn log_ticks_are_powers_and_their_multiples() {
        assert_eq!(
            log_ticks(0.5, 80.0, 2.0).bold,
            vec![0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
        );
        assert_eq!(log_ticks(3.0, 30.0, 10.0).bold, vec![5.0, 10.0, 20.0]);
        let wide = log_ticks(VALUE_MIN, VALUE_MAX, 10.0);
        assert!(wide.bold.len() <= TICKS_MAX, "{:?}", wide.bold);
        assert!(wide.bold.len() >= 5);
        assert!(log_ticks(0.0, 1.0, 10.0).bold.is_empty());
    }

    #[test]
    fn ticks_stay_few_on_any_range() {
        // Every range the charts can build (cleaned values, widened, padded), and ranges
        // they cannot: the count is bounded, the loops end, nothing is outside the range.
        let edges = [
            -VALUE_MAX * 1.35,
            -1e9,
            -1.0,
            -VALUE_MIN,
            0.0,
            VALUE_MIN,
            1e-3,
            1.0,
            1e9,
            1e14,
            VALUE_MAX * 1.35,
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
            5e-324,
        ];
        for &a in &edges {
            for &b in &edges {
                for (ticks, log) in [
                    (linear_ticks(a, b), false),
                    (log_ticks(a, b, 2.0), true),
                    (log_ticks(a, b, 10.0), true),
                ] {
                    assert!(ticks.bold.len() <= TICKS_MAX + 1, "{a:e}..{b:e} log {log}");
                    assert!(ticks.light.len() <= LIGHT_MAX, "{a:e}..{b:e} log {log}");
                    for v in ticks.bold.iter().chain(&ticks.light) {
                        assert!(*v >= a && *v <= b, "{v:e} outside {a:e}..{b:e}");
                    }
                }
                let (low, high) = axis_range(a.min(b), a.max(b), false);
                if a.is_finite() && b.is_finite() && a.abs() <= VALUE_MAX && b.abs() <= VALUE_MAX {
                    assert!(high > low && linear_ticks(low, high).bold.len() >= 2);
                }
            }
        }
    }

    #[test]
    fn values_are_cut_to_what_can_be_drawn() {
        assert_eq!(clean_value(f64::NAN), None);
        assert_eq!(clean_value(f64::NEG_INFINITY), None);
        assert_eq!(clean_value(1e-320), Some(0.0));
        assert_eq!(clean_value(-1e300), Some(-VALUE_MAX));
        assert_eq!(clean_value(2.5), Some(2.5));
    }

    #[test]
    fn narrow_ranges_are_widened() {
        assert_eq!(axis_range(0.0, 0.0, false), (-1.0, 1.0));
        assert_eq!(axis_range(1e14, 1e14 + 0.005, false), (0.9e14, 1.1e14));
        assert_eq!(axis_range(8.0, 8.0, true), (4.0, 16.0));
        assert_eq!(
            axis_range(0.0, 0.0, true),
            (VALUE_MIN / 2.0, VALUE_MIN * 2.0)
        );
        assert_eq!(axis_range(2.0, 7.0, false), (2.0, 7.0));
    }
}
