//! A report a person would rather look at: a document of headings, text, tables and charts,
//! rendered as one self-contained HTML file.
//!
//! - **Self-contained**: the CSS is inline and every chart is inline SVG, so the file opens
//!   from a mail attachment or an air-gapped machine; it loads nothing from the network and
//!   needs no JavaScript.
//! - **Charts through `plotters`** (its SVG backend): a maintained chart crate draws the
//!   axes, ticks, legends and marks, so this crate only says what to draw.
//! - **Plain data in**: every chart takes plain numbers and names ([`Series`], [`Bar`],
//!   [`StackedBar`], [`Percentiles`]), not a workload report, so any command (`stress`,
//!   `repro`, `compare`) can fill it from whatever it measured.
//!
//! ```
//! use hotpage_report::{Block, Chart, Document, LineChart, Section, Series};
//!
//! let mut doc = Document::new("Scaling");
//! doc.sections.push(Section {
//!     heading: "rows/s by sessions".into(),
//!     blocks: vec![Block::Chart(Chart::Lines(LineChart {
//!         title: "rows/s".into(),
//!         x_label: "sessions".into(),
//!         y_label: "rows/s".into(),
//!         x_log2: true,
//!         y_log10: false,
//!         series: vec![Series::new("identity", vec![(1.0, 900.0), (8.0, 700.0)])],
//!     }))],
//! });
//! let html = hotpage_report::render_html(&doc)?;
//! assert!(html.contains("<svg"));
//! # Ok::<(), hotpage_report::ReportError>(())
//! ```

mod charts;
mod html;
mod ticks;

pub use html::{escape_html, render_html, write_html};

/// What can go wrong while rendering or writing a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// plotters refused to draw a chart.
    #[error("drawing chart '{chart}': {reason}")]
    Chart {
        /// The chart's title.
        chart: String,
        /// plotters' message.
        reason: String,
    },
    /// The HTML file could not be written.
    #[error("writing the report to {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// A whole report: a title, an optional line under it, and sections in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Document {
    /// The page title (also the browser tab's).
    pub title: String,
    /// One line under the title: the command, the machine, the date.
    pub subtitle: Option<String>,
    /// The sections, in order.
    pub sections: Vec<Section>,
}

impl Document {
    /// An empty document with this title.
    pub fn new(title: impl Into<String>) -> Document {
        Document {
            title: title.into(),
            subtitle: None,
            sections: Vec::new(),
        }
    }
}

/// A heading and what follows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Section {
    /// The section's heading.
    pub heading: String,
    /// Its content, in order.
    pub blocks: Vec<Block>,
}

/// One piece of a section.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// A paragraph of text.
    Text(String),
    /// A highlighted paragraph: a caveat the reader must not miss (what a 2-core machine
    /// cannot show, for example).
    Note(String),
    /// Monospaced text kept as written (a command, a text report).
    Preformatted(String),
    /// A table.
    Table(Table),
    /// A chart.
    Chart(Chart),
}

/// A table of text cells. Rows shorter than the header are padded with empty cells.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// A line above the table, or `None`.
    pub caption: Option<String>,
    /// Column names.
    pub header: Vec<String>,
    /// The rows, each a list of cells.
    pub rows: Vec<Vec<String>>,
}

/// A chart; each kind takes plain data.
#[derive(Clone, Debug, PartialEq)]
pub enum Chart {
    /// Lines over a numeric x axis: the scaling curve (rows/s by sessions, one line per
    /// design or engine), or any y by x.
    Lines(LineChart),
    /// Stacked bars: wait time by wait type, one bar per run.
    StackedBars(StackedBarChart),
    /// Horizontal bars, largest first: the hottest pages.
    Bars(BarChart),
    /// Latency percentiles (p50, p90, p99, p99.9, max) on a logarithmic axis, one line per
    /// run.
    Latency(LatencyChart),
}

impl Chart {
    /// The chart's title.
    pub fn title(&self) -> &str {
        match self {
            Chart::Lines(c) => &c.title,
            Chart::StackedBars(c) => &c.title,
            Chart::Bars(c) => &c.title,
            Chart::Latency(c) => &c.title,
        }
    }

    /// The kind's name, as the HTML's `data-chart` attribute gives it.
    pub fn kind(&self) -> &'static str {
        match self {
            Chart::Lines(_) => "lines",
            Chart::StackedBars(_) => "stacked-bars",
            Chart::Bars(_) => "bars",
            Chart::Latency(_) => "latency",
        }
    }
}

/// A named line of (x, y) points.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// The legend's name (a design, an engine).
    pub name: String,
    /// Its points; they are drawn in x order. Points that are not finite are left out.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// A series of these points.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
        }
    }
}

/// Lines over a numeric x axis.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LineChart {
    /// Title above the chart.
    pub title: String,
    /// The x axis's name, with its unit.
    pub x_label: String,
    /// The y axis's name, with its unit.
    pub y_label: String,
    /// A base-2 logarithmic x axis (sessions 1, 2, 4 … 64 spaced evenly); positive x only.
    pub x_log2: bool,
    /// A base-10 logarithmic y axis, for values that span decades (latencies, where one
    /// engine's outlier would flatten every other line on a linear axis); points whose y
    /// is not positive are left out.
    pub y_log10: bool,
    /// One line each.
    pub series: Vec<Series>,
}

/// One part of a stacked bar.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Segment {
    /// What it measures (a wait type); segments of one name share a colour across bars.
    pub name: String,
    /// Its size (negative and non-finite values count as 0).
    pub value: f64,
}

/// One stacked bar.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StackedBar {
    /// The bar's label under the axis (a design, a run).
    pub label: String,
    /// Its parts, drawn bottom up.
    pub segments: Vec<Segment>,
}

/// Stacked bars, one per label.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StackedBarChart {
    /// Title above the chart.
    pub title: String,
    /// The y axis's name, with its unit.
    pub y_label: String,
    /// The bars, left to right.
    pub bars: Vec<StackedBar>,
}

/// One plain bar.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bar {
    /// Its label (a page, a design).
    pub label: String,
    /// Its length (negative and non-finite values count as 0).
    pub value: f64,
}

/// Horizontal bars, drawn top to bottom in the given order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BarChart {
    /// Title above the chart.
    pub title: String,
    /// The value axis's name, with its unit.
    pub value_label: String,
    /// The bars, top first.
    pub bars: Vec<Bar>,
}

/// Latency percentiles of one run, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// The longest.
    pub max: f64,
}

impl Percentiles {
    /// The axis labels, in order.
    pub const NAMES: [&'static str; 5] = ["p50", "p90", "p99", "p99.9", "max"];

    /// The values in the order of [`Percentiles::NAMES`].
    pub fn values(&self) -> [f64; 5] {
        [self.p50, self.p90, self.p99, self.p999, self.max]
    }
}

/// One run's latency line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatencyRun {
    /// The legend's name.
    pub name: String,
    /// Its percentiles.
    pub percentiles: Percentiles,
}

/// Latency percentiles, one line per run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatencyChart {
    /// Title above the chart.
    pub title: String,
    /// The runs.
    pub runs: Vec<LatencyRun>,
}
