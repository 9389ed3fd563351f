//! The HTML and its charts: escaping, empty data, one point, odd values.

use hotpage_report::{
    Bar, BarChart, Block, Chart, Document, LatencyChart, LatencyRun, LineChart, Percentiles,
    Section, Segment, Series, StackedBar, StackedBarChart, Table, escape_html, render_html,
};
use proptest::prelude::*;

fn one_section(blocks: Vec<Block>) -> Document {
    let mut doc = Document::new("test report");
    doc.sections.push(Section {
        heading: "section".into(),
        blocks,
    });
    doc
}

fn scaling(series: Vec<Series>) -> Chart {
    Chart::Lines(LineChart {
        title: "rows/s by sessions".into(),
        x_label: "sessions".into(),
        y_label: "rows/s".into(),
        x_log2: true,
        y_log10: false,
        series,
    })
}

fn every_kind(name: &str) -> Vec<Block> {
    vec![
        Block::Chart(scaling(vec![Series::new(
            name,
            vec![(1.0, 10.0), (2.0, 20.0), (64.0, 15.0)],
        )])),
        Block::Chart(Chart::StackedBars(StackedBarChart {
            title: "waits".into(),
            y_label: "ms".into(),
            bars: vec![StackedBar {
                label: name.into(),
                segments: vec![
                    Segment {
                        name: name.into(),
                        value: 3.0,
                    },
                    Segment {
                        name: "WRITELOG".into(),
                        value: 1.0,
                    },
                ],
            }],
        })),
        Block::Chart(Chart::Bars(BarChart {
            title: "hot pages".into(),
            value_label: "ms".into(),
            bars: vec![Bar {
                label: name.into(),
                value: 2.0,
            }],
        })),
        Block::Chart(Chart::Latency(LatencyChart {
            title: "latency".into(),
            runs: vec![LatencyRun {
                name: name.into(),
                percentiles: Percentiles {
                    p50: 0.4,
                    p90: 2.0,
                    p99: 29.5,
                    p999: 7733.2,
                    max: 75366.4,
                },
            }],
        })),
        Block::Table(Table {
            caption: Some(name.into()),
            header: vec![name.into(), "rows/s".into()],
            rows: vec![vec![name.into(), "1,234".into()]],
        }),
        Block::Text(name.into()),
        Block::Note(name.into()),
        Block::Preformatted(name.into()),
    ]
}

/// The number of `<svg` elements, one per chart.
fn svg_count(html: &str) -> usize {
    html.matches("<svg").count()
}

#[test]
fn every_chart_kind_renders_as_inline_svg() {
    let html = render_html(&one_section(every_kind("identity"))).expect("renders");
    assert_eq!(svg_count(&html), 4);
    for kind in ["lines", "stacked-bars", "bars", "latency"] {
        assert!(
            html.contains(&format!("data-chart=\"{kind}\"")),
            "{kind} missing"
        );
    }
    assert_eq!(html.matches("</svg>").count(), 4);
    // Self-contained: nothing fetched, nothing run.
    for forbidden in ["<script", "src=\"http", "href=\"http", "<link", "@import"] {
        assert!(!html.contains(forbidden), "found {forbidden}");
    }
    // The percentiles are named on the axis, the design in the legend.
    for label in ["p50", "p90", "p99.9", "max", "identity", "WRITELOG"] {
        assert!(html.contains(label), "{label} missing");
    }
}

#[test]
fn names_are_escaped_everywhere() {
    let nasty = "<script>alert('x')</script> & \"quoted\"";
    let mut doc = one_section(every_kind(nasty));
    doc.title = nasty.into();
    doc.subtitle = Some(nasty.into());
    doc.sections[0].heading = nasty.into();
    let html = render_html(&doc).expect("renders");
    assert!(!html.contains("<script"), "an unescaped tag");
    assert!(!html.contains("alert('x')"), "an unescaped quote");
    assert!(html.contains("&lt;script&gt;"));
}

#[test]
fn empty_data_draws_a_frame_that_says_so() {
    let blocks = vec![
        Block::Chart(scaling(Vec::new())),
        Block::Chart(scaling(vec![Series::new("none", Vec::new())])),
        Block::Chart(Chart::StackedBars(StackedBarChart::default())),
        Block::Chart(Chart::Bars(BarChart::default())),
        Block::Chart(Chart::Latency(LatencyChart::default())),
        Block::Table(Table::default()),
    ];
    let html = render_html(&one_section(blocks)).expect("renders");
    assert_eq!(svg_count(&html), 5);
    assert_eq!(html.matches("no data").count(), 5);
}

#[test]
fn an_empty_document_is_a_page() {
    let html = render_html(&Document::new("nothing")).expect("renders");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<title>nothing</title>"));
    assert!(html.trim_end().ends_with("</html>"));
}

#[test]
fn a_chart_with_one_point_is_drawn() {
    let html = render_html(&one_section(vec![Block::Chart(scaling(vec![
        Series::new("identity", vec![(8.0, 1000.0)]),
    ]))]))
    .expect("renders");
    assert_eq!(svg_count(&html), 1);
    assert!(!html.contains("no data"));
    assert!(html.contains("<circle"), "the point is marked");
    // A linear axis and a single bar too.
    let mut linear = scaling(vec![Series::new("identity", vec![(100.0, 0.0)])]);
    if let Chart::Lines(chart) = &mut linear {
        chart.x_log2 = false;
    }
    let bar = Chart::Bars(BarChart {
        title: "one".into(),
        value_label: "ms".into(),
        bars: vec![Bar {
            label: "0:1".into(),
            value: 5.0,
        }],
    });
    let html =
        render_html(&one_section(vec![Block::Chart(linear), Block::Chart(bar)])).expect("renders");
    assert_eq!(svg_count(&html), 2);
    assert!(html.contains("<rect"));
}

/// The heights of the `<rect>`s filled with the first palette colour (the bars) in the
/// chart `kind` of `html`.
fn bar_heights(html: &str, kind: &str) -> Vec<f64> {
    let start = html
        .find(&format!("data-chart=\"{kind}\""))
        .expect("the chart");
    let svg = &html[start..start + html[start..].find("</svg>").expect("its end")];
    svg.split("<rect ")
        .skip(1)
        .filter(|rect| rect.contains("fill=\"#1F77B4\""))
        .filter_map(|rect| {
            let height = rect.split("height=\"").nth(1)?.split('"').next()?;
            height.parse().ok()
        })
        .collect()
}

#[test]
fn a_lone_bar_has_a_height() {
    // One bar (a one-design run's waits) once had a negative height: plotters maps every
    // position of a one-row axis to its middle.
    for bars in [1, 2, 5] {
        let bar_chart = Chart::Bars(BarChart {
            title: "hot pages".into(),
            value_label: "ms".into(),
            bars: (0..bars)
                .map(|i| Bar {
                    label: format!("0:{i}"),
                    value: 5.0 + f64::from(i),
                })
                .collect(),
        });
        let stacked = Chart::StackedBars(StackedBarChart {
            title: "waits".into(),
            y_label: "ms".into(),
            bars: (0..bars)
                .map(|i| StackedBar {
                    label: format!("run {i}"),
                    segments: vec![Segment {
                        name: "WRITELOG".into(),
                        value: 565.2,
                    }],
                })
                .collect(),
        });
        let html = render_html(&one_section(vec![
            Block::Chart(bar_chart),
            Block::Chart(stacked),
        ]))
        .expect("renders");
        for kind in ["bars", "stacked-bars"] {
            let heights = bar_heights(&html, kind);
            // The stacked chart's legend swatch has the colour too.
            assert!(heights.len() >= bars as usize, "{kind}: {heights:?}");
            assert!(
                heights.iter().all(|h| *h >= 10.0),
                "{kind} with {bars} bars: {heights:?}"
            );
        }
        // One label per bar, none for the empty row.
        assert_eq!(html.matches(">\n0:0\n</text>").count(), 1, "{bars} bars");
        assert_eq!(html.matches(">\nrun 0\n</text>").count(), 1, "{bars} bars");
    }
}

#[test]
fn huge_values_are_cut_rather_than_hanging_the_axis() {
    // Padding an axis up to 1.7e308 overflows to infinity, where plotters' tick search
    // never ends: such values must be cut before they reach it.
    let huge = f64::MAX;
    let blocks = vec![
        Block::Chart(scaling(vec![Series::new(
            "huge",
            vec![(1.0, huge), (2.0, 1.0)],
        )])),
        Block::Chart(Chart::Bars(BarChart {
            title: "huge".into(),
            value_label: "ms".into(),
            bars: vec![Bar {
                label: "0:1".into(),
                value: huge,
            }],
        })),
        Block::Chart(Chart::Latency(LatencyChart {
            title: "huge".into(),
            runs: vec![LatencyRun {
                name: "huge".into(),
                percentiles: Percentiles {
                    p50: 1.0,
                    p90: huge,
                    p99: huge,
                    p999: huge,
                    max: huge,
                },
            }],
        })),
    ];
    let html = render_html(&one_section(blocks)).expect("renders");
    assert_eq!(svg_count(&html), 3);
}

#[test]
fn write_html_reports_a_bad_path() {
    let error = hotpage_report::write_html(
        &Document::new("x"),
        std::path::Path::new("/nonexistent-dir/for/sure/report.html"),
    )
    .expect_err("no such directory");
    assert!(
        error
            .to_string()
            .contains("/nonexistent-dir/for/sure/report.html")
    );
}

/// Values at the edges of f64 and of what the charts draw: not numbers, infinities, zeros,
/// subnormals, the smallest and largest drawn magnitudes and their neighbours, and f64's
/// extremes.
const EXTREMES: [f64; 22] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.0,
    -0.0,
    5e-324,
    1e-320,
    f64::MIN_POSITIVE,
    1e-10,
    1e-9,
    0.5,
    1.0,
    1e9,
    1e9 + 1.0,
    1e12,
    1e14 + 0.005,
    1e15,
    1e15 + 1.0,
    1e16,
    1e300,
    f64::MAX,
    -f64::MAX,
];

/// The five charts of one section, drawn from the same points and values.
fn all_charts(name: &str, points: Vec<(f64, f64)>, values: &[f64]) -> Vec<Block> {
    let bars: Vec<Bar> = values
        .iter()
        .map(|v| Bar {
            label: name.into(),
            value: *v,
        })
        .collect();
    vec![
        Block::Chart(scaling(vec![Series::new(name, points.clone())])),
        Block::Chart(Chart::Lines(LineChart {
            x_log2: false,
            y_log10: false,
            series: vec![Series::new(name, points.clone())],
            ..LineChart::default()
        })),
        Block::Chart(Chart::Lines(LineChart {
            x_log2: true,
            y_log10: true,
            series: vec![Series::new(name, points)],
            ..LineChart::default()
        })),
        Block::Chart(Chart::Bars(BarChart {
            bars,
            ..BarChart::default()
        })),
        Block::Chart(Chart::StackedBars(StackedBarChart {
            bars: vec![StackedBar {
                label: name.into(),
                segments: values
                    .iter()
                    .map(|v| Segment {
                        name: name.into(),
                        value: *v,
                    })
                    .collect(),
            }],
            ..StackedBarChart::default()
        })),
        Block::Chart(Chart::Latency(LatencyChart {
            runs: vec![LatencyRun {
                name: name.into(),
                percentiles: Percentiles {
                    p50: values.first().copied().unwrap_or(0.0),
                    p90: values.get(1).copied().unwrap_or(f64::NAN),
                    p99: values.get(2).copied().unwrap_or(-1.0),
                    p999: values.get(3).copied().unwrap_or(1e300),
                    max: values.get(4).copied().unwrap_or(0.0),
                },
            }],
            ..LatencyChart::default()
        })),
    ]
}

#[test]
fn every_pair_of_extreme_values_renders() {
    // Deterministic and without a timeout: the axes' ticks come from bounded loops, so a
    // pair that used to spin plotters' tick search (a subnormal x on the log axis, ranges
    // of 1e9 and beyond) must now simply return. Each pair is a point, its mirror, and a
    // point at x = 1, and the bar and latency values.
    for &a in &EXTREMES {
        for &b in &EXTREMES {
            let points = vec![(a, b), (b, a), (1.0, a)];
            let values = [a, b, 1.0, b, a];
            let html = render_html(&one_section(all_charts("pair", points, &values)))
                .unwrap_or_else(|e| panic!("({a:e}, {b:e}): {e}"));
            assert_eq!(svg_count(&html), 6, "({a:e}, {b:e})");
        }
    }
}

fn any_f64() -> impl Strategy<Value = f64> {
    // The whole f64 range (any bit pattern: NaN, infinities, subnormals, 1e308), and the
    // edges that random bits rarely hit.
    prop_oneof![
        any::<f64>(),
        (0u64..10_000).prop_map(f64::from_bits),
        proptest::sample::select(EXTREMES.to_vec()),
        -1e9f64..1e9,
        -1e16f64..1e16,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn escaping_leaves_no_markup(text in any::<String>()) {
        let escaped = escape_html(&text);
        for c in ['<', '>', '"', '\''] {
            prop_assert!(!escaped.contains(c));
        }
        // Every & starts an entity.
        let unescaped = escaped
            .replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"")
            .replace("&#39;", "'").replace("&amp;", "&");
        prop_assert_eq!(unescaped, text);
    }

    #[test]
    fn any_values_and_names_render_without_error(
        name in any::<String>(),
        points in proptest::collection::vec((any_f64(), any_f64()), 0..12),
        values in proptest::collection::vec(any_f64(), 0..8),
    ) {
        let blocks = all_charts(&name, points, &values);
        let html = render_html(&one_section(blocks)).expect("renders");
        prop_assert_eq!(svg_count(&html), 6);
        prop_assert!(!html.contains("<script"));
    }
}

/// The `cy` of every `<circle>` (a line chart's points) of `html`, in order.
fn circle_heights(html: &str) -> Vec<f64> {
    html.split("<circle ")
        .skip(1)
        .filter_map(|circle| {
            let at = circle.find("cy=\"")? + 4;
            let end = circle[at..].find('"')?;
            circle[at..at + end].parse().ok()
        })
        .collect()
}

/// The text of every `<text>` element of `html` (tick labels, axis names, legend).
fn text_labels(html: &str) -> Vec<String> {
    html.split("<text")
        .skip(1)
        .filter_map(|text| {
            let body = &text[text.find('>')? + 1..];
            Some(body[..body.find('<')?].trim().to_string())
        })
        .collect()
}

fn latency_by_sessions(series: Vec<Series>) -> Chart {
    Chart::Lines(LineChart {
        title: "p99 latency by sessions".into(),
        x_label: "sessions".into(),
        y_label: "µs (log scale)".into(),
        x_log2: true,
        y_log10: true,
        series,
    })
}

#[test]
fn a_log_y_axis_keeps_small_values_apart_beside_an_outlier() {
    // compare's p99 curves: one engine's 142 ms at 64 sessions beside the others' 60 µs
    // to 4 ms. On a linear axis 60 µs and 4 ms lie a few pixels apart.
    let steady = Series::new("hotpage", vec![(1.0, 60.0), (8.0, 550.0), (64.0, 4_000.0)]);
    let outlier = Series::new(
        "fjall",
        vec![(1.0, 63.0), (8.0, 4_440.0), (64.0, 141_820.0)],
    );
    let chart = latency_by_sessions(vec![steady, outlier]);
    let html = render_html(&one_section(vec![Block::Chart(chart.clone())])).expect("renders");
    let heights = circle_heights(&html);
    assert_eq!(heights.len(), 6, "every point is marked");
    // y grows downwards in SVG: 60 µs lies well below 4 ms, which lies well below 142 ms.
    assert!(heights[0] - heights[2] > 80.0, "{heights:?}");
    assert!(heights[2] - heights[5] > 80.0, "{heights:?}");
    let labels = text_labels(&html);
    for decade in ["100", "1000", "10k", "100k"] {
        assert!(labels.iter().any(|l| l == decade), "{decade} in {labels:?}");
    }
    let Chart::Lines(mut linear) = chart else {
        unreachable!("built as lines")
    };
    linear.y_log10 = false;
    let html =
        render_html(&one_section(vec![Block::Chart(Chart::Lines(linear))])).expect("renders");
    let heights = circle_heights(&html);
    assert!(
        heights[0] - heights[2] < 20.0,
        "linear: flattened, {heights:?}"
    );
}

#[test]
fn a_log_y_axis_leaves_out_what_it_cannot_place() {
    let some = latency_by_sessions(vec![Series::new(
        "a",
        vec![(1.0, 0.0), (2.0, 10.0), (4.0, -3.0)],
    )]);
    let none = latency_by_sessions(vec![Series::new("b", vec![(1.0, 0.0), (2.0, f64::NAN)])]);
    let html = render_html(&one_section(vec![Block::Chart(some)])).expect("renders");
    assert_eq!(circle_heights(&html).len(), 1, "only the positive point");
    let html = render_html(&one_section(vec![Block::Chart(none)])).expect("renders");
    assert!(html.contains("no data"));
}

/// The value of attribute `name` in the element text `element`.
fn attribute(element: &str, name: &str) -> Option<f64> {
    let at = element.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = element[at..].find('"')?;
    element[at..at + end].parse().ok()
}

#[test]
fn the_legend_covers_no_point() {
    // Every line peaks at both ends, so whichever upper corner the legend takes has
    // points under it unless the axis leaves room above them.
    for lines in 1..=6 {
        for y_log10 in [false, true] {
            let series = (0..lines)
                .map(|i| {
                    let top = 1_000.0 * (i + 1) as f64;
                    Series::new(
                        format!("engine {i}"),
                        vec![(1.0, top), (8.0, 10.0), (64.0, top)],
                    )
                })
                .collect();
            let mut chart = latency_by_sessions(series);
            if let Chart::Lines(lines) = &mut chart {
                lines.y_log10 = y_log10;
            }
            let html = render_html(&one_section(vec![Block::Chart(chart)])).expect("renders");
            let legend = html
                .split("<rect")
                .find(|r| r.contains("stroke=\"#B4B4B4\""))
                .expect("a legend box");
            let (x, y) = (
                attribute(legend, "x").unwrap(),
                attribute(legend, "y").unwrap(),
            );
            let (w, h) = (
                attribute(legend, "width").unwrap(),
                attribute(legend, "height").unwrap(),
            );
            for circle in html.split("<circle").skip(1) {
                let (cx, cy) = (
                    attribute(circle, "cx").unwrap(),
                    attribute(circle, "cy").unwrap(),
                );
                let inside =
                    cx >= x - 4.0 && cx <= x + w + 4.0 && cy >= y - 4.0 && cy <= y + h + 4.0;
                assert!(
                    !inside,
                    "{lines} lines, log {y_log10}: point ({cx}, {cy}) under the legend at ({x}, {y}) {w}×{h}"
                );
            }
        }
    }
}
