//! Exact decimal arithmetic on `numeric` values held as a scaled `i128` (value = scaled /
//! 10^scale) with at most 38 significant digits, so every value fits an `i128`.
//!
//! Rounding is half away from zero throughout, as PostgreSQL's numeric rounds.

use std::cmp::Ordering;

use crate::error::{SqlError, SqlResult, sqlstate};

/// The most decimal digits a numeric holds (and its largest scale).
pub(crate) const DIGITS_MAX: u8 = 38;

/// 10^38: every numeric's scaled value is below this in magnitude.
const SCALED_LIMIT: u128 = 100_000_000_000_000_000_000_000_000_000_000_000_000;

/// The result scale a division aims for when both operands have fewer fraction digits
/// (PostgreSQL aims for at least 16 significant digits; a fixed 16 fraction digits is
/// this simpler stand-in).
const DIV_SCALE_MIN: u8 = 16;

/// 10^n as an `i128`; `None` past 10^38.
pub(crate) fn pow10(n: u8) -> Option<i128> {
    10i128.checked_pow(u32::from(n))
}

/// 22003 "value overflows numeric format": a result past 38 digits.
pub(crate) fn overflow() -> SqlError {
    SqlError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        "value overflows numeric format",
    )
}

/// 22012 "division by zero".
pub(crate) fn division_by_zero() -> SqlError {
    SqlError::new(sqlstate::DIVISION_BY_ZERO, "division by zero")
}

/// Whether a scaled value is within 38 digits.
fn fits(scaled: i128) -> bool {
    scaled.unsigned_abs() < SCALED_LIMIT
}

/// Checks that `scaled` (at `scale`) fits `numeric(precision, scale)`, with PostgreSQL's
/// "numeric field overflow" error otherwise.
pub(crate) fn check_precision(scaled: i128, precision: u8, scale: u8) -> SqlResult<()> {
    let limit = 10u128.checked_pow(u32::from(precision));
    if limit.is_some_and(|limit| scaled.unsigned_abs() < limit) {
        return Ok(());
    }
    Err(field_overflow(precision, scale))
}

/// PostgreSQL's "numeric field overflow" with its detail line.
pub(crate) fn field_overflow(precision: u8, scale: u8) -> SqlError {
    let int_digits = precision.saturating_sub(scale);
    // PostgreSQL writes 10^0 as 1.
    let bound = if int_digits == 0 {
        "1".to_string()
    } else {
        format!("10^{int_digits}")
    };
    SqlError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        "numeric field overflow",
    )
    .with_detail(format!(
        "A field with precision {precision}, scale {scale} must round to an absolute value \
             less than {bound}."
    ))
}

/// `n / d` for `d > 0`, rounded half away from zero.
fn div_round(n: i128, d: i128) -> Option<i128> {
    if d <= 0 {
        return None;
    }
    let quotient = n / d;
    let remainder = n % d;
    let rem_abs = remainder.unsigned_abs();
    if rem_abs >= d.unsigned_abs() - rem_abs {
        quotient.checked_add(n.signum())
    } else {
        Some(quotient)
    }
}

/// Re-expresses `scaled` at scale `from` at scale `to`, rounding half away from zero;
/// `None` if the result overflows an `i128`.
pub(crate) fn rescale(scaled: i128, from: u8, to: u8) -> Option<i128> {
    if to >= from {
        scaled.checked_mul(pow10(to - from)?)
    } else {
        div_round(scaled, pow10(from - to)?)
    }
}

/// A numeric printed with exactly `scale` fraction digits (`-1.50`).
pub(crate) fn format(scaled: i128, scale: u8) -> String {
    let digits = scaled.unsigned_abs().to_string();
    let sign = if scaled < 0 { "-" } else { "" };
    let scale = usize::from(scale);
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int_part, frac_part) = padded.split_at(padded.len() - scale);
    format!("{sign}{int_part}.{frac_part}")
}

/// The nearest `f64` (correctly rounded, through the decimal text).
pub(crate) fn to_f64(scaled: i128, scale: u8) -> f64 {
    // The text `format` writes always parses; NaN would only flag a bug.
    format(scaled, scale).parse().unwrap_or(f64::NAN)
}

/// The nearest `f32` (rounded once, from the decimal text).
pub(crate) fn to_f32(scaled: i128, scale: u8) -> f32 {
    format(scaled, scale).parse().unwrap_or(f32::NAN)
}

/// A float as a scaled numeric at `scale`: like PostgreSQL, it keeps the float's first 15
/// significant digits, then rounds to the scale. `None` if it overflows 38 digits.
pub(crate) fn from_f64(value: f64, scale: u8) -> SqlResult<Option<i128>> {
    Ok(float_digits(value)?.to_scaled(scale))
}

/// A finite float's first 15 significant digits; NaN and the infinities, which hotpage's
/// numeric lacks, are 0A000.
fn float_digits(value: f64) -> SqlResult<Decimal> {
    if value.is_nan() {
        return Err(SqlError::unsupported("numeric NaN"));
    }
    if value.is_infinite() {
        return Err(SqlError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            "cannot convert infinity to numeric",
        ));
    }
    // `{:.14e}` of a finite float always parses; the error would only flag a bug.
    parse_decimal(&format!("{value:.14e}")).ok_or_else(overflow)
}

/// A float as an unconstrained numeric: its first 15 significant digits (PostgreSQL's
/// `%.15g`), trailing zeros dropped, at the scale those digits need (`0.1` is 0.1, `1e20`
/// 100000000000000000000, `0` and `-0` 0).
pub(crate) fn from_f64_own_scale(value: f64) -> SqlResult<(i128, u8)> {
    let mut decimal = float_digits(value)?;
    while decimal.digits.last() == Some(&0) {
        decimal.digits.pop();
        decimal.exponent += 1;
    }
    if decimal.digits.is_empty() {
        // Zero has no digits to place: `{:.14e}` wrote 0.00000000000000e0.
        decimal.exponent = 0;
    }
    decimal.at_own_scale()
}

/// A decimal number parsed from text: `digits × 10^exponent`.
#[derive(Debug, PartialEq)]
pub(crate) struct Decimal {
    /// A minus sign was given.
    pub negative: bool,
    /// The significant digits (0..=9 each), without leading zeros.
    pub digits: Vec<u8>,
    /// The power of ten the digits are scaled by.
    pub exponent: i64,
}

/// Parses PostgreSQL's numeric input syntax: optional whitespace and sign, digits with an
/// optional point, an optional exponent (`-1.5e3`). `None` if it is not a number.
pub(crate) fn parse_decimal(text: &str) -> Option<Decimal> {
    let text = text.trim();
    let (negative, rest) = match text.as_bytes().first() {
        Some(b'-') => (true, text.get(1..)?),
        Some(b'+') => (false, text.get(1..)?),
        _ => (false, text),
    };
    let (mantissa, exponent_text) = match rest.find(['e', 'E']) {
        Some(at) => (rest.get(..at)?, Some(rest.get(at + 1..)?)),
        None => (rest, None),
    };
    let (int_part, frac_part) = match mantissa.split_once('.') {
        Some((int_part, frac_part)) => (int_part, frac_part),
        None => (mantissa, ""),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int_part.len() + frac_part.len() == 0 || !all_digits(int_part) || !all_digits(frac_part) {
        return None;
    }
    let mut exponent = match exponent_text {
        Some(text) => parse_exponent(text)?,
        None => 0,
    };
    exponent = exponent.checked_sub(i64::try_from(frac_part.len()).ok()?)?;
    let digits: Vec<u8> = int_part
        .bytes()
        .chain(frac_part.bytes())
        .skip_while(|b| *b == b'0')
        .map(|b| b - b'0')
        .collect();
    Some(Decimal {
        negative,
        digits,
        exponent,
    })
}

/// An exponent: optional sign and digits. Huge exponents saturate; the caller's digit
/// limit refuses them (or rounds them to zero) anyway.
fn parse_exponent(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, text.get(1..)?),
        Some(b'+') => (false, text.get(1..)?),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let magnitude = digits.bytes().fold(0i64, |acc, b| {
        acc.saturating_mul(10)
            .saturating_add(i64::from(b - b'0'))
            .min(1_000_000_000)
    });
    Some(if negative { -magnitude } else { magnitude })
}

impl Decimal {
    /// The value at the scale its text gave (`1.50` at 2, `1.5e3` at 0), as PostgreSQL's
    /// unconstrained numeric keeps it. More than 38 digits in all, or a non-zero digit
    /// past the 38th after the point, is 22003: PostgreSQL keeps such a value whole, and
    /// hotpage will not round it silently (`1e-40` is not 0). Zeros past the 38th are
    /// dropped.
    pub(crate) fn at_own_scale(&self) -> SqlResult<(i128, u8)> {
        let own = self.exponent.min(0).unsigned_abs();
        let past = own.saturating_sub(u64::from(DIGITS_MAX));
        let past = usize::try_from(past).unwrap_or(usize::MAX);
        // The last `past` digits lie past the 38th place (all of them, if there are fewer).
        if self.digits.iter().rev().take(past).any(|digit| *digit != 0) {
            return Err(overflow().with_detail(format!(
                "hotpage's numeric keeps at most {DIGITS_MAX} digits after the point"
            )));
        }
        // own is at most 38 here, or every digit past the 38th is zero.
        let scale = u8::try_from(own.min(u64::from(DIGITS_MAX))).unwrap_or(DIGITS_MAX);
        let scaled = self.to_scaled(scale).ok_or_else(overflow)?;
        Ok((scaled, scale))
    }

    /// The value scaled by 10^scale and rounded half away from zero; `None` if that needs
    /// more than 38 digits.
    pub(crate) fn to_scaled(&self, scale: u8) -> Option<i128> {
        let shift = self.exponent.checked_add(i64::from(scale))?;
        let len = i64::try_from(self.digits.len()).ok()?;
        // Digits kept: all of them (then `shift` zeros), or those left of the cut.
        let cut = if shift >= 0 { len } else { len + shift };
        if cut < 0 {
            // Even the first digit lies past the first dropped position: below one half.
            return Some(0);
        }
        let cut = usize::try_from(cut).ok()?;
        let mut scaled: i128 = 0;
        for digit in self.digits.iter().take(cut) {
            scaled = scaled.checked_mul(10)?.checked_add(i128::from(*digit))?;
        }
        if shift > 0 && scaled != 0 {
            scaled = scaled.checked_mul(pow10(u8::try_from(shift).ok()?)?)?;
        }
        if self
            .digits
            .get(cut)
            .is_some_and(|first_dropped| *first_dropped >= 5)
        {
            scaled = scaled.checked_add(1)?;
        }
        if !fits(scaled) {
            return None;
        }
        Some(if self.negative { -scaled } else { scaled })
    }
}

/// `a + b`, at the larger scale.
pub(crate) fn add(a: (i128, u8), b: (i128, u8)) -> SqlResult<(i128, u8)> {
    let scale = a.1.max(b.1);
    let x = rescale(a.0, a.1, scale).ok_or_else(overflow)?;
    let y = rescale(b.0, b.1, scale).ok_or_else(overflow)?;
    let sum = x.checked_add(y).filter(|v| fits(*v)).ok_or_else(overflow)?;
    Ok((sum, scale))
}

/// `a - b`, at the larger scale.
pub(crate) fn sub(a: (i128, u8), b: (i128, u8)) -> SqlResult<(i128, u8)> {
    let negated = b.0.checked_neg().ok_or_else(overflow)?;
    add(a, (negated, b.1))
}

/// `a * b` at scale `sa + sb`, giving up fraction digits (rounding) when the exact product
/// needs more than 38 digits, and failing when its integer part does.
pub(crate) fn mul(a: (i128, u8), b: (i128, u8)) -> SqlResult<(i128, u8)> {
    let (mut hi, mut lo) = mul_wide(a.0.unsigned_abs(), b.0.unsigned_abs());
    let mut scale = u16::from(a.1) + u16::from(b.1);
    // Only the most significant digit dropped decides half-away-from-zero rounding.
    let mut dropped_digit = 0;
    while hi != 0 || lo >= SCALED_LIMIT || scale > u16::from(DIGITS_MAX) {
        if scale == 0 {
            return Err(overflow());
        }
        let digit;
        (hi, lo, digit) = div10_wide(hi, lo);
        dropped_digit = digit;
        scale -= 1;
    }
    if dropped_digit >= 5 {
        lo += 1;
        if lo == SCALED_LIMIT {
            // Rounding carried into a 39th digit: drop one more (it is a zero).
            if scale == 0 {
                return Err(overflow());
            }
            lo /= 10;
            scale -= 1;
        }
    }
    let magnitude = i128::try_from(lo).map_err(|_| overflow())?;
    let negative = (a.0 < 0) != (b.0 < 0);
    let scale = u8::try_from(scale).map_err(|_| overflow())?;
    Ok((if negative { -magnitude } else { magnitude }, scale))
}

/// The 256-bit product of two `u128`s, as (high, low) halves.
fn mul_wide(a: u128, b: u128) -> (u128, u128) {
    const MASK: u128 = u64::MAX as u128;
    let (a1, a0) = (a >> 64, a & MASK);
    let (b1, b0) = (b >> 64, b & MASK);
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 64) + (p01 & MASK) + (p10 & MASK);
    let lo = (p00 & MASK) | (mid << 64);
    let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
    (hi, lo)
}

/// A 256-bit (high, low) value divided by 10: (high, low, remainder).
fn div10_wide(hi: u128, lo: u128) -> (u128, u128, u8) {
    const MASK: u128 = u64::MAX as u128;
    let q_hi = hi / 10;
    let upper = ((hi % 10) << 64) | (lo >> 64);
    let lower = ((upper % 10) << 64) | (lo & MASK);
    let q_lo = ((upper / 10) << 64) | (lower / 10);
    // `lower % 10` is below 10.
    (q_hi, q_lo, (lower % 10) as u8)
}

/// The weight (base-10000 exponent) and first base-10000 digit of `scaled · 10^-scale`,
/// as PostgreSQL's numeric stores it; zero is (0, 0).
fn weight_and_first_digit(scaled: i128, scale: u8) -> (i32, u128) {
    let x = scaled.unsigned_abs();
    if x == 0 {
        return (0, 0);
    }
    // The decimal exponent of the leading digit: x · 10^-scale is in [10^e, 10^(e+1)).
    let e = x.ilog10() as i32 - i32::from(scale);
    let weight = e.div_euclid(4);
    // floor(x · 10^-scale / 10000^weight), below 10000 by the choice of weight.
    let shift = 4 * weight + i32::from(scale);
    let first = if shift >= 0 {
        x / 10u128.pow(shift.unsigned_abs())
    } else {
        x * 10u128.pow(shift.unsigned_abs())
    };
    (weight, first)
}

/// The result scale of `a / b`: PostgreSQL's `select_div_scale`, enough fraction digits for
/// at least 16 significant ones and no fewer than either operand's.
fn div_scale(a: (i128, u8), b: (i128, u8)) -> u8 {
    let (w1, d1) = weight_and_first_digit(a.0, a.1);
    let (w2, d2) = weight_and_first_digit(b.0, b.1);
    let mut qweight = w1 - w2;
    if d1 <= d2 {
        qweight -= 1;
    }
    let scale = (i32::from(DIV_SCALE_MIN) - qweight * 4)
        .max(i32::from(a.1))
        .max(i32::from(b.1))
        .clamp(0, i32::from(DIGITS_MAX));
    scale as u8
}

/// `a / b`, at PostgreSQL's result scale ([`div_scale`]), lowered as far as needed for the
/// quotient to fit 38 digits; rounded half away from zero.
pub(crate) fn div(a: (i128, u8), b: (i128, u8)) -> SqlResult<(i128, u8)> {
    if b.0 == 0 {
        return Err(division_by_zero());
    }
    let target = div_scale(a, b);
    let (x, y) = (a.0.unsigned_abs(), b.0.unsigned_abs());
    for scale in (0..=target).rev() {
        if let Some(quotient) = div_at_scale(x, a.1, y, b.1, scale) {
            let magnitude = i128::try_from(quotient).map_err(|_| overflow())?;
            let negative = (a.0 < 0) != (b.0 < 0);
            return Ok((if negative { -magnitude } else { magnitude }, scale));
        }
    }
    Err(overflow())
}

/// `round(x·10^-sx / (y·10^-sy) · 10^scale)` for `y > 0`; `None` if it needs more than 38
/// digits. Works digit by digit so nothing overflows a `u128`.
fn div_at_scale(x: u128, sx: u8, y: u128, sy: u8, scale: u8) -> Option<u128> {
    let shift = i32::from(sy) + i32::from(scale) - i32::from(sx);
    let mut quotient;
    if shift <= 0 {
        let power = 10u128.checked_pow(shift.unsigned_abs());
        let Some(den) = power.and_then(|p| y.checked_mul(p)) else {
            // The divisor exceeds 2^128 > 2x: the quotient rounds to zero.
            return Some(0);
        };
        quotient = x / den;
        let remainder = x % den;
        if remainder >= den - remainder {
            quotient += 1;
        }
    } else {
        quotient = x / y;
        let mut remainder = x % y;
        for _ in 0..shift {
            let (digit, next) = times_ten_divmod(remainder, y);
            quotient = quotient.checked_mul(10)?.checked_add(digit)?;
            if quotient >= SCALED_LIMIT {
                return None;
            }
            remainder = next;
        }
        if remainder >= y - remainder {
            quotient += 1;
        }
    }
    (quotient < SCALED_LIMIT).then_some(quotient)
}

/// `(10·r / y, 10·r % y)` for `r < y`, by repeated addition so that `10·r` (which may not
/// fit a `u128`) is never formed.
fn times_ten_divmod(remainder: u128, y: u128) -> (u128, u128) {
    let mut acc: u128 = 0;
    let mut digit = 0;
    for _ in 0..10 {
        // acc < y and remainder < y <= 2^127, so the sum fits.
        acc += remainder;
        if acc >= y {
            acc -= y;
            digit += 1;
        }
    }
    (digit, acc)
}

/// `a % b` (the sign of `a`), at the larger scale.
pub(crate) fn rem(a: (i128, u8), b: (i128, u8)) -> SqlResult<(i128, u8)> {
    if b.0 == 0 {
        return Err(division_by_zero());
    }
    let scale = a.1.max(b.1);
    let x = rescale(a.0, a.1, scale).ok_or_else(overflow)?;
    let y = rescale(b.0, b.1, scale).ok_or_else(overflow)?;
    // `checked_rem` fails only for i128::MIN % -1, whose remainder is 0.
    Ok((x.checked_rem(y).unwrap_or(0), scale))
}

/// Compares two numerics exactly, whatever their scales: integer parts first, then the
/// fraction parts brought to scale 38 (which always fits).
pub(crate) fn cmp(a: (i128, u8), b: (i128, u8)) -> Ordering {
    match (split(a), split(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        // Only a scale past 38 (never stored) gets here.
        _ => to_f64(a.0, a.1).total_cmp(&to_f64(b.0, b.1)),
    }
}

/// (integer part, fraction part at scale 38), both truncated toward zero.
fn split((scaled, scale): (i128, u8)) -> Option<(i128, i128)> {
    let unit = pow10(scale)?;
    let fraction = (scaled % unit).checked_mul(pow10(DIGITS_MAX.checked_sub(scale)?)?)?;
    Some((scaled / unit, fraction))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(text: &str, scale: u8) -> i128 {
        parse_decimal(text).unwrap().to_scaled(scale).unwrap()
    }

    #[test]
    fn parses_and_rounds_half_away_from_zero() {
        assert_eq!(dec("1.005", 2), 101);
        assert_eq!(dec("-1.005", 2), -101);
        assert_eq!(dec("1.004", 2), 100);
        assert_eq!(dec(" +12 ", 0), 12);
        assert_eq!(dec(".5", 0), 1);
        assert_eq!(dec("5.", 1), 50);
        assert_eq!(dec("1.5e3", 0), 1500);
        assert_eq!(dec("15e-1", 0), 2);
        assert_eq!(dec("0.00000000000000000000000000000000000000000001", 5), 0);
        assert_eq!(dec("1e-1000000000000", 2), 0);
        assert_eq!(
            dec("0000000000000000000000000000000000000000000000042", 0),
            42
        );
        assert_eq!(dec("0.5", 0), 1);
        assert_eq!(dec("0.05", 0), 0);
        assert!(
            parse_decimal("1e99999999999")
                .unwrap()
                .to_scaled(0)
                .is_none()
        );
        assert!(parse_decimal("1").unwrap().to_scaled(38).is_none());
        for bad in [
            "", ".", "-", "1.2.3", "e5", "1e", "abc", "1 2", "--1", "0x10",
        ] {
            assert_eq!(parse_decimal(bad), None, "{bad}");
        }
    }

    #[test]
    fn formats_with_exact_scale() {
        assert_eq!(format(150, 2), "1.50");
        assert_eq!(format(-5, 2), "-0.05");
        assert_eq!(format(0, 3), "0.000");
        assert_eq!(format(42, 0), "42");
        assert_eq!(
            format(i128::MIN, 0),
            "-170141183460469231731687303715884105728"
        );
    }

    #[test]
    fn multiplies_exactly_or_rounds_fraction_digits() {
        assert_eq!(mul((150, 2), (-3, 0)), Ok((-450, 2)));
        let big = (10i128.pow(37), 19);
        // 10^18 × 10^18 = 10^36, at scale 38 that needs 74 digits: scale drops to 1.
        let (scaled, scale) = mul(big, big).unwrap();
        assert_eq!(
            format(scaled, scale),
            "1000000000000000000000000000000000000.0"
        );
        assert_eq!(mul((10i128.pow(37), 0), (100, 0)), Err(overflow()));
        // 0.5 × 0.5 at scale 76 → rounded: 0.25 exact.
        let half = (5 * 10i128.pow(37), 38);
        assert_eq!(
            mul(half, half).map(|(v, s)| format(v, s)).unwrap(),
            format(25, 2) + &"0".repeat(36)
        );
        // 1/3 × 1/3 needs rounding of its 39th+ digits.
        let third = (33_333_333_333_333_333_333_333_333_333_333_333_333, 38);
        let (v, s) = mul(third, third).unwrap();
        assert_eq!(s, 38);
        assert_eq!(v, 11_111_111_111_111_111_111_111_111_111_111_111_111);
    }

    #[test]
    fn divides_at_postgresqls_scale() {
        // select 1 / 3.0 → 0.33333333333333333333 (20 digits); 10 / 4.0 → 2.5000000000000000
        assert_eq!(div((1, 0), (30, 1)), Ok((33_333_333_333_333_333_333, 20)));
        assert_eq!(div((10, 0), (4, 0)), Ok((25_000_000_000_000_000, 16)));
        // avg(1) is 1 / 1: 1.00000000000000000000.
        assert_eq!(div((1, 0), (1, 0)), Ok((10i128.pow(20), 20)));
        assert_eq!(div((2, 0), (3, 0)), Ok((66_666_666_666_666_666_667, 20)));
        assert_eq!(div((-2, 0), (3, 0)), Ok((-66_666_666_666_666_666_667, 20)));
        assert_eq!(weight_and_first_digit(123_456, 0), (1, 12));
        assert_eq!(weight_and_first_digit(5, 3), (-1, 50));
        assert_eq!(div((1, 0), (0, 2)), Err(division_by_zero()));
        // 10^37 / 10^-38 is 10^75: no scale makes it fit.
        assert_eq!(div((10i128.pow(37), 0), (1, 38)), Err(overflow()));
        // A large quotient gets fewer fraction digits (PostgreSQL: 16 significant digits).
        let (v, s) = div((10i128.pow(30), 0), (3, 0)).unwrap();
        assert_eq!(format(v, s), "333333333333333333333333333333");
        // Tiny quotients round to zero.
        assert_eq!(div((1, 38), (10i128.pow(37), 0)), Ok((0, 38)));
    }

    #[test]
    fn remainder_and_comparison() {
        assert_eq!(rem((75, 1), (2, 0)), Ok((15, 1)));
        assert_eq!(rem((-75, 1), (2, 0)), Ok((-15, 1)));
        assert_eq!(rem((1, 0), (0, 0)), Err(division_by_zero()));
        assert_eq!(cmp((15, 1), (150, 2)), Ordering::Equal);
        assert_eq!(cmp((-15, 1), (-149, 2)), Ordering::Less);
        assert_eq!(cmp((10i128.pow(37), 0), (1, 38)), Ordering::Greater);
        assert_eq!(cmp((-1, 0), (-9, 1)), Ordering::Less);
        assert_eq!(cmp((-5, 1), (3, 1)), Ordering::Less);
    }

    #[test]
    fn float_conversion_keeps_fifteen_digits() {
        assert_eq!(from_f64(0.1, 20), Ok(Some(10i128.pow(19))));
        assert_eq!(from_f64(2.5, 0), Ok(Some(3)));
        assert_eq!(from_f64(1e300, 0), Ok(None));
        assert!(from_f64(f64::NAN, 0).is_err());
        assert_eq!(to_f64(-150, 2), -1.5);
    }

    #[test]
    fn precision_check_detail() {
        let err = check_precision(100_000, 5, 2).unwrap_err();
        assert_eq!(err.message, "numeric field overflow");
        assert_eq!(
            err.detail.as_deref(),
            Some(
                "A field with precision 5, scale 2 must round to an absolute value less than 10^3."
            )
        );
        let err = check_precision(100, 2, 2).unwrap_err();
        assert!(err.detail.unwrap().ends_with("less than 1."));
        assert_eq!(check_precision(99_999, 5, 2), Ok(()));
    }
}
