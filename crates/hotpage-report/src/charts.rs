//! Each chart kind drawn by plotters' SVG backend into a string.
//!
//! The data is cleaned first (non-finite values left out, negative bar lengths as 0, log
//! axes kept positive), so that no input makes plotters panic or draw outside the frame,
//! and every `f64` axis gets its ticks from `ticks` (plotters' own tick search can loop
//! forever on some ranges; that module says which).
//! A chart with nothing to draw is still drawn: an empty frame that says "no data", so a
//! reader sees that the run had none rather than a chart gone missing.

use crate::ticks::{TickedAxis, VALUE_MAX, axis_range, clean_value, linear_ticks, log_ticks};
use crate::{BarChart, Chart, LatencyChart, LineChart, Percentiles, ReportError, StackedBarChart};
use plotters::coord::Shift;
use plotters::coord::combinators::LogCoord;
use plotters::coord::ranged1d::{SegmentedCoord, ValueFormatter};
use plotters::coord::types::{RangedCoordf64, RangedCoordu32};
use plotters::prelude::*;

/// Width of every chart, in SVG pixels (the page scales it down on narrow screens).
const WIDTH_PX: u32 = 900;
/// Height of the line and latency charts.
const HEIGHT_PX: u32 = 400;
/// A line chart's margin on every side, and the height of its x labels.
const LINE_MARGIN_PX: u32 = 14;
const LINE_X_LABELS_PX: u32 = 48;
/// Height of one horizontal bar, and what a bar chart needs besides its bars.
const BAR_ROW_PX: u32 = 30;
const BAR_CHART_FRAME_PX: u32 = 110;
/// The smallest value a logarithmic axis shows (0.01 µs): zero latencies sit at the floor.
const LOG_FLOOR: f64 = 0.01;
/// Font of labels and legends.
const FONT: &str = "sans-serif";

/// Tableau's ten colours: distinct, readable on white, and kind to colour-blind readers.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// The i-th colour of the palette, cycling.
fn colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

/// The chart as an `<svg>` element.
pub(crate) fn render_svg(chart: &Chart) -> Result<String, ReportError> {
    let height_px = match chart {
        Chart::Lines(_) | Chart::Latency(_) => HEIGHT_PX,
        Chart::StackedBars(c) => bar_chart_height(c.bars.len()),
        Chart::Bars(c) => bar_chart_height(c.bars.len()),
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH_PX, height_px)).into_drawing_area();
        let drawn = root
            .fill(&WHITE)
            .map_err(|e| e.to_string())
            .and_then(|()| match chart {
                Chart::Lines(c) => draw_lines(&root, c),
                Chart::StackedBars(c) => draw_stacked_bars(&root, c),
                Chart::Bars(c) => draw_bars(&root, c),
                Chart::Latency(c) => draw_latency(&root, c),
            })
            .and_then(|()| root.present().map_err(|e| e.to_string()));
        drawn.map_err(|reason| ReportError::Chart {
            chart: chart.title().to_string(),
            reason,
        })?;
    }
    Ok(svg)
}

fn bar_chart_height(bars: usize) -> u32 {
    let bars = u32::try_from(bars.max(1)).unwrap_or(u32::MAX / BAR_ROW_PX);
    BAR_CHART_FRAME_PX.saturating_add(bars.min(200) * BAR_ROW_PX)
}

/// An empty frame that says so.
fn draw_no_data(root: &Area<'_>) -> Result<(), String> {
    let (width, height) = root.dim_in_pixel();
    let style = TextStyle::from((FONT, 22).into_font())
        .color(&RGBColor(110, 110, 110))
        .pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Center,
            plotters::style::text_anchor::VPos::Center,
        ));
    let half = |v: u32| i32::try_from(v / 2).unwrap_or(0);
    root.draw(&Rectangle::new(
        [(1, 1), (half(width) * 2 - 1, half(height) * 2 - 1)],
        RGBColor(200, 200, 200).stroke_width(1),
    ))
    .map_err(|e| e.to_string())?;
    root.draw(&Text::new("no data", (half(width), half(height)), style))
        .map_err(|e| e.to_string())
}

/// A number in few characters: 1234567 → 1.23M, 0.5 → 0.5.
pub(crate) fn short_number(value: f64) -> String {
    // -0.0 + 0.0 is 0.0: an axis never reads "-0".
    let value = value + 0.0;
    let magnitude = value.abs();
    let (scaled, suffix) = if magnitude >= 1e9 {
        (value / 1e9, "G")
    } else if magnitude >= 1e6 {
        (value / 1e6, "M")
    } else if magnitude >= 1e4 {
        (value / 1e3, "k")
    } else {
        (value, "")
    };
    let text = if scaled.fract().abs() < 1e-9 || scaled.abs() >= 100.0 {
        format!("{scaled:.0}")
    } else if scaled.abs() >= 10.0 {
        format!("{scaled:.1}")
    } else {
        format!("{scaled:.2}")
    };
    // 1.40M reads as 1.4M; 2.00 as 2.
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text}{suffix}")
}

/// Microseconds with the unit that reads best.
pub(crate) fn short_micros(us: f64) -> String {
    if us >= 1e6 {
        format!("{} s", short_number(us / 1e6))
    } else if us >= 1e3 {
        format!("{} ms", short_number(us / 1e3))
    } else {
        format!("{} µs", short_number(us))
    }
}

/// The points of a series that can be drawn, in x order: points beyond ±`VALUE_MAX` are
/// left out (cutting one would move it), magnitudes too small to draw are 0, and on a log
/// x axis only positive x remain.
fn clean_points(points: &[(f64, f64)], x_positive: bool) -> Vec<(f64, f64)> {
    let mut clean: Vec<(f64, f64)> = points
        .iter()
        .filter(|(x, y)| x.abs() <= VALUE_MAX && y.abs() <= VALUE_MAX)
        .filter_map(|(x, y)| Some((clean_value(*x)?, clean_value(*y)?)))
        .filter(|(x, _)| !x_positive || *x > 0.0)
        .collect();
    clean.sort_by(|a, b| a.0.total_cmp(&b.0));
    clean
}

/// A linear `f64` axis over `[low, high]` with its ticks computed in `ticks`.
fn linear_axis(low: f64, high: f64) -> TickedAxis<RangedCoordf64> {
    TickedAxis::new((low..high).into(), linear_ticks(low, high))
}

/// A logarithmic `f64` axis over `[low, high]` (positive) with its ticks computed in
/// `ticks`.
fn log_axis(low: f64, high: f64, base: f64) -> TickedAxis<LogCoord<f64>> {
    let coord: LogCoord<f64> = (low..high).log_scale().base(base).into();
    TickedAxis::new(coord, log_ticks(low, high, base))
}

fn draw_lines(root: &Area<'_>, chart: &LineChart) -> Result<(), String> {
    let series: Vec<(&str, Vec<(f64, f64)>)> = chart
        .series
        .iter()
        .map(|s| {
            let mut points = clean_points(&s.points, chart.x_log2);
            points.retain(|(_, y)| !chart.y_log10 || *y > 0.0);
            (s.name.as_str(), points)
        })
        .collect();
    let all = || series.iter().flat_map(|(_, points)| points.iter());
    if all().next().is_none() {
        return draw_no_data(root);
    }
    let x_low = all().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x_high = all().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let (x_low, x_high) = axis_range(x_low, x_high, chart.x_log2);
    // A margin, so that the first and last points are not cut by the frame.
    let (x_low, x_high) = if chart.x_log2 {
        (x_low / 1.15, x_high * 1.15)
    } else {
        let pad = (x_high - x_low) * 0.03;
        (x_low - pad, x_high + pad)
    };
    // The top of the y axis leaves the legend's share of the plot empty: the legend sits
    // in an upper corner, and would otherwise cover the points there.
    let share = legend_share(series.len());
    let (y_low, y_high) = if chart.y_log10 {
        let low = all().map(|p| p.1).fold(f64::INFINITY, f64::min) / 2.0;
        let high = all().map(|p| p.1).fold(0.0, f64::max) * 1.2;
        let top = (high.ln() + (high.ln() - low.ln()) * share / (1.0 - share)).exp();
        axis_range(low, top, true)
    } else {
        let low = all().map(|p| p.1).fold(0.0, f64::min);
        let high = all().map(|p| p.1).fold(0.0, f64::max) * 1.05;
        axis_range(low, high + (high - low) * share / (1.0 - share), false)
    };
    let corner = legend_corner(&series, (x_low, x_high), chart.x_log2);
    let mut builder = ChartBuilder::on(root);
    builder
        .margin(LINE_MARGIN_PX)
        .x_label_area_size(LINE_X_LABELS_PX)
        .y_label_area_size(78);
    let lines = Lines {
        chart,
        series: &series,
        corner,
    };
    match (chart.x_log2, chart.y_log10) {
        (true, true) => lines.draw_on(
            &mut builder,
            log_axis(x_low, x_high, 2.0),
            log_axis(y_low, y_high, 10.0),
        ),
        (true, false) => lines.draw_on(
            &mut builder,
            log_axis(x_low, x_high, 2.0),
            linear_axis(y_low, y_high),
        ),
        (false, true) => lines.draw_on(
            &mut builder,
            linear_axis(x_low, x_high),
            log_axis(y_low, y_high, 10.0),
        ),
        (false, false) => lines.draw_on(
            &mut builder,
            linear_axis(x_low, x_high),
            linear_axis(y_low, y_high),
        ),
    }
}

/// The share of a line chart's plot height that its legend box takes for `series` lines
/// (about 20 px a line and 14 px of frame, plus a few to spare), at most a half.
fn legend_share(series: usize) -> f64 {
    let plot_px = f64::from(HEIGHT_PX - 2 * LINE_MARGIN_PX - LINE_X_LABELS_PX);
    let legend_px = 20.0 * series as f64 + 20.0;
    (legend_px / plot_px).min(0.5)
}

/// A line chart's cleaned series and legend corner, to draw on any pair of axes.
struct Lines<'c> {
    chart: &'c LineChart,
    series: &'c [(&'c str, Vec<(f64, f64)>)],
    corner: SeriesLabelPosition,
}

impl Lines<'_> {
    fn draw_on<'a, X, Y>(
        self,
        builder: &mut ChartBuilder<'_, '_, SVGBackend<'a>>,
        x: X,
        y: Y,
    ) -> Result<(), String>
    where
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let mut ctx = builder
            .build_cartesian_2d(x, y)
            .map_err(|e| e.to_string())?;
        finish_lines(&mut ctx, self.chart, self.series, self.corner)
    }
}

/// Mesh, lines, points and legend, for any pair of axes.
fn finish_lines<'a, X, Y>(
    ctx: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    chart: &LineChart,
    series: &[(&str, Vec<(f64, f64)>)],
    corner: SeriesLabelPosition,
) -> Result<(), String>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    ctx.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .x_label_formatter(&|x| short_number(*x))
        .y_label_formatter(&|y| short_number(*y))
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .light_line_style(RGBColor(238, 238, 238))
        .draw()
        .map_err(|e| e.to_string())?;
    for (index, (name, points)) in series.iter().enumerate() {
        let style = colour(index).stroke_width(3);
        ctx.draw_series(LineSeries::new(points.iter().copied(), style))
            .map_err(|e| e.to_string())?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        ctx.draw_series(
            points
                .iter()
                .map(|p| Circle::new(*p, 4, colour(index).filled())),
        )
        .map_err(|e| e.to_string())?;
    }
    draw_legend(ctx, corner)
}

/// The upper corner whose side of the chart has the lower points: the legend box covers
/// about the top quarter of the plot, and a scaling curve that peaks at the right (rows/s
/// rising with sessions) would otherwise end under it.
fn legend_corner(
    series: &[(&str, Vec<(f64, f64)>)],
    (x_low, x_high): (f64, f64),
    x_log2: bool,
) -> SeriesLabelPosition {
    let at = |x: f64| match x_log2 {
        true => (x.log2() - x_low.log2()) / (x_high.log2() - x_low.log2()),
        false => (x - x_low) / (x_high - x_low),
    };
    let highest = |side: &dyn Fn(f64) -> bool| {
        series
            .iter()
            .flat_map(|(_, points)| points.iter())
            .filter(|(x, _)| side(at(*x)))
            .map(|(_, y)| *y)
            .fold(f64::NEG_INFINITY, f64::max)
    };
    if highest(&|f| f >= 0.6) > highest(&|f| f <= 0.4) {
        SeriesLabelPosition::UpperLeft
    } else {
        SeriesLabelPosition::UpperRight
    }
}

fn draw_legend<'a, X: Ranged, Y: Ranged>(
    ctx: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    corner: SeriesLabelPosition,
) -> Result<(), String> {
    ctx.configure_series_labels()
        .position(corner)
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(180, 180, 180))
        .label_font((FONT, 14))
        .draw()
        .map_err(|e| e.to_string())
}

/// Bar lengths that can be drawn: negative and non-finite values are 0, huge ones cut.
fn bar_value(value: f64) -> f64 {
    clean_value(value).map_or(0.0, |v| v.max(0.0))
}

/// Left margin wide enough for the longest label (about 8 px a character at 14 px).
fn label_area_px(labels: impl Iterator<Item = usize>) -> u32 {
    let longest = u32::try_from(labels.max().unwrap_or(0)).unwrap_or(u32::MAX);
    longest.saturating_mul(8).clamp(60, 320)
}

/// A label cut to what fits the label area.
fn fit_label(label: &str) -> String {
    const MAX_CHARS: usize = 40;
    if label.chars().count() <= MAX_CHARS {
        label.to_string()
    } else {
        let cut: String = label.chars().take(MAX_CHARS - 1).collect();
        format!("{cut}…")
    }
}

fn draw_stacked_bars(root: &Area<'_>, chart: &StackedBarChart) -> Result<(), String> {
    let totals: Vec<f64> = chart
        .bars
        .iter()
        .map(|bar| bar.segments.iter().map(|s| bar_value(s.value)).sum())
        .collect();
    let high = totals.iter().copied().fold(0.0, f64::max);
    if chart.bars.is_empty() || high <= 0.0 {
        return draw_no_data(root);
    }
    // One colour per segment name, in order of first appearance.
    let mut names: Vec<&str> = Vec::new();
    for segment in chart.bars.iter().flat_map(|b| b.segments.iter()) {
        if !names.contains(&segment.name.as_str()) {
            names.push(&segment.name);
        }
    }
    let count = u32::try_from(chart.bars.len()).map_err(|e| e.to_string())?;
    let labels: Vec<String> = chart.bars.iter().map(|b| fit_label(&b.label)).collect();
    let mut ctx = ChartBuilder::on(root)
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(label_area_px(labels.iter().map(|l| l.chars().count())))
        .build_cartesian_2d(linear_axis(0.0, high * 1.35), bar_rows(count))
        .map_err(|e| e.to_string())?;
    configure_bar_mesh(&mut ctx, &chart.y_label, &labels)?;
    for (colour_index, name) in names.iter().enumerate() {
        let fill = colour(colour_index).filled();
        let rectangles = chart.bars.iter().enumerate().filter_map(|(i, bar)| {
            let below: f64 = bar
                .segments
                .iter()
                .take_while(|s| s.name != *name)
                .map(|s| bar_value(s.value))
                .sum();
            let own = bar.segments.iter().find(|s| s.name == *name)?;
            let row = row_of(i, count);
            let mut rect = Rectangle::new(
                [
                    (below, SegmentValue::Exact(row)),
                    (below + bar_value(own.value), SegmentValue::Exact(row + 1)),
                ],
                fill,
            );
            rect.set_margin(5, 5, 0, 0);
            Some(rect)
        });
        ctx.draw_series(rectangles)
            .map_err(|e| e.to_string())?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], fill));
    }
    draw_legend(&mut ctx, SeriesLabelPosition::UpperRight)
}

/// The rows of a bar chart with `count` bars, as a segmented axis. At least two rows: on
/// one (`0..0`) plotters maps every position to the middle, and a lone bar from the
/// start of its row to the start of the next was drawn with a negative height (an empty
/// wait chart for a one-design run). A lone bar takes the bottom row, the top one stays
/// empty.
fn bar_rows(count: u32) -> SegmentedCoord<RangedCoordu32> {
    (0..count.max(2) - 1).into_segmented()
}

/// The segmented row of the i-th bar: the first bar on top.
fn row_of(index: usize, count: u32) -> u32 {
    let index = u32::try_from(index).unwrap_or(count);
    count.saturating_sub(1).saturating_sub(index)
}

type BarContext<'a> = ChartContext<
    'a,
    SVGBackend<'a>,
    Cartesian2d<TickedAxis<RangedCoordf64>, SegmentedCoord<RangedCoordu32>>,
>;

fn configure_bar_mesh(
    ctx: &mut BarContext<'_>,
    value_label: &str,
    labels: &[String],
) -> Result<(), String> {
    let count = u32::try_from(labels.len()).unwrap_or(u32::MAX);
    let label_of = |v: &SegmentValue<u32>| match v {
        // The empty top row of a one-bar chart has no label.
        SegmentValue::CenterOf(row) if *row < count => {
            let index = count.saturating_sub(1).saturating_sub(*row);
            usize::try_from(index)
                .ok()
                .and_then(|i| labels.get(i))
                .cloned()
                .unwrap_or_default()
        }
        _ => String::new(),
    };
    ctx.configure_mesh()
        .disable_y_mesh()
        .x_desc(value_label)
        .x_label_formatter(&|x| short_number(*x))
        .y_labels(labels.len())
        .y_label_formatter(&label_of)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .light_line_style(RGBColor(238, 238, 238))
        .draw()
        .map_err(|e| e.to_string())
}

fn draw_bars(root: &Area<'_>, chart: &BarChart) -> Result<(), String> {
    let high = chart
        .bars
        .iter()
        .map(|b| bar_value(b.value))
        .fold(0.0, f64::max);
    if chart.bars.is_empty() || high <= 0.0 {
        return draw_no_data(root);
    }
    let count = u32::try_from(chart.bars.len()).map_err(|e| e.to_string())?;
    let labels: Vec<String> = chart.bars.iter().map(|b| fit_label(&b.label)).collect();
    let mut ctx = ChartBuilder::on(root)
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(label_area_px(labels.iter().map(|l| l.chars().count())))
        .build_cartesian_2d(linear_axis(0.0, high * 1.18), bar_rows(count))
        .map_err(|e| e.to_string())?;
    configure_bar_mesh(&mut ctx, &chart.value_label, &labels)?;
    let fill = colour(0).filled();
    ctx.draw_series(chart.bars.iter().enumerate().map(|(i, bar)| {
        let row = row_of(i, count);
        let mut rect = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(row)),
                (bar_value(bar.value), SegmentValue::Exact(row + 1)),
            ],
            fill,
        );
        rect.set_margin(5, 5, 0, 0);
        rect
    }))
    .map_err(|e| e.to_string())?;
    // Each bar's value at its end.
    let style =
        TextStyle::from((FONT, 13).into_font()).pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Left,
            plotters::style::text_anchor::VPos::Center,
        ));
    ctx.draw_series(chart.bars.iter().enumerate().map(|(i, bar)| {
        let value = bar_value(bar.value);
        Text::new(
            format!(" {}", short_number(value)),
            (value, SegmentValue::CenterOf(row_of(i, count))),
            style.clone(),
        )
    }))
    .map_err(|e| e.to_string())?;
    Ok(())
}

fn draw_latency(root: &Area<'_>, chart: &LatencyChart) -> Result<(), String> {
    // A run whose every percentile is missing (not finite) has nothing to draw.
    let runs: Vec<(&str, Vec<(u32, f64)>)> = chart
        .runs
        .iter()
        .map(|run| (run.name.as_str(), latency_points(&run.percentiles)))
        .filter(|(_, points)| !points.is_empty())
        .collect();
    let values = || runs.iter().flat_map(|(_, p)| p.iter().map(|(_, v)| *v));
    if values().next().is_none() {
        return draw_no_data(root);
    }
    let low = values().fold(f64::INFINITY, f64::min);
    let high = values().fold(0.0, f64::max);
    let (low, high) = axis_range(low / 1.5, high * 3.0, true);
    let mut ctx = ChartBuilder::on(root)
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(78)
        .build_cartesian_2d((0u32..4).into_segmented(), log_axis(low, high, 10.0))
        .map_err(|e| e.to_string())?;
    ctx.configure_mesh()
        .disable_x_mesh()
        .x_desc("percentile")
        .y_desc("latency of one insert (log scale)")
        .x_labels(5)
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => usize::try_from(*i)
                .ok()
                .and_then(|i| Percentiles::NAMES.get(i))
                .map_or_else(String::new, |name| (*name).to_string()),
            _ => String::new(),
        })
        .y_label_formatter(&|y| short_micros(*y))
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .light_line_style(RGBColor(238, 238, 238))
        .draw()
        .map_err(|e| e.to_string())?;
    for (index, (name, points)) in runs.iter().enumerate() {
        let style = colour(index).stroke_width(3);
        let at = |(i, v): (u32, f64)| (SegmentValue::CenterOf(i), v);
        ctx.draw_series(LineSeries::new(points.iter().copied().map(at), style))
            .map_err(|e| e.to_string())?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        ctx.draw_series(
            points
                .iter()
                .map(|p| Circle::new(at(*p), 4, colour(index).filled())),
        )
        .map_err(|e| e.to_string())?;
    }
    ctx.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(180, 180, 180))
        .label_font((FONT, 14))
        .draw()
        .map_err(|e| e.to_string())
}

/// A run's percentiles as (index, µs) points, zeros raised to the log axis's floor.
fn latency_points(percentiles: &Percentiles) -> Vec<(u32, f64)> {
    (0u32..)
        .zip(percentiles.values())
        .filter(|(_, v)| v.is_finite())
        .map(|(i, v)| (i, v.clamp(LOG_FLOOR, VALUE_MAX)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_numbers_read_well() {
        assert_eq!(short_number(1_267_967.0), "1.27M");
        assert_eq!(short_number(1_400_000.0), "1.4M");
        assert_eq!(short_number(98_966.0), "99k");
        assert_eq!(short_number(64.0), "64");
        assert_eq!(short_number(0.5), "0.5");
        assert_eq!(short_number(0.0), "0");
        assert_eq!(short_number(-0.0), "0");
        assert_eq!(short_micros(7733.2), "7.73 ms");
        assert_eq!(short_micros(0.4), "0.4 µs");
    }

    /// The legend goes to the upper corner away from the highest points: a rising scaling
    /// curve (the 2026-11-24 compare report) ended under an upper-right legend.
    #[test]
    fn the_legend_avoids_the_highest_points() {
        let rising = [(
            "a",
            vec![(1.0, 7_629.0), (8.0, 27_818.0), (64.0, 190_159.0)],
        )];
        let falling = [("a", vec![(1.0, 2.4e6), (8.0, 2.0e6), (64.0, 1.5e6)])];
        let on = |series: &[(&str, Vec<(f64, f64)>)], log| {
            matches!(
                legend_corner(series, (1.0 / 1.15, 64.0 * 1.15), log),
                SeriesLabelPosition::UpperLeft
            )
        };
        assert!(on(&rising, true), "rising: the legend goes upper left");
        assert!(!on(&falling, true), "falling: the legend stays upper right");
        let linear = [("a", vec![(0.0, 1.0), (10.0, 5.0)])];
        assert!(legend_corner(&linear, (0.0, 10.0), false) == SeriesLabelPosition::UpperLeft);
    }

    #[test]
    fn the_first_bar_is_the_top_row() {
        assert_eq!(row_of(0, 3), 2);
        assert_eq!(row_of(2, 3), 0);
    }

    #[test]
    fn unusable_points_are_left_out_and_sorted() {
        let points = [
            (4.0, 1.0),
            (f64::NAN, 2.0),
            (0.0, 3.0),
            (1.0, f64::INFINITY),
            (2.0, 5.0),
            (3.0, 1e300),
        ];
        assert_eq!(clean_points(&points, true), vec![(2.0, 5.0), (4.0, 1.0)]);
        assert_eq!(
            clean_points(&points, false),
            vec![(0.0, 3.0), (2.0, 5.0), (4.0, 1.0)]
        );
    }
}
