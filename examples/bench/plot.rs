//! `--plot DIR`: the benchmark's figures as PNG charts (plotters), for
//! `docs/benchmarks.md`: processing rate against concurrency beside the
//! store's ceiling, the pickup latency distribution, and the processing
//! rate against the size of the backlog.

use std::path::Path;

use examples::plot::register_font;
use plotters::prelude::*;

/// What the phases measured, for the charts.
#[derive(Debug, Default)]
pub(crate) struct Figures {
    /// (concurrency, tasks per second) of the processing runs.
    pub(crate) processing: Vec<(usize, f64)>,
    /// The store's plain-command ceiling (Redis SET per second), if measured.
    pub(crate) ceiling: Option<f64>,
    /// Submit→start latencies of the latency run, milliseconds.
    pub(crate) latency_ms: Vec<f64>,
    /// The latency run's submit rate, tasks per second.
    pub(crate) latency_rate: u64,
    /// (tasks queued, tasks per second) of the backlog runs.
    pub(crate) backlog: Vec<(usize, f64)>,
}

type Res = Result<(), Box<dyn std::error::Error>>;

/// Writes `<store>-processing.png`, `<store>-latency.png` and
/// `<store>-backlog.png` into `dir` for the figures that were measured;
/// returns the files written.
pub(crate) fn write(dir: &Path, store: &str, f: &Figures) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    register_font()?;
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    if !f.processing.is_empty() {
        let path = dir.join(format!("bench-{store}-processing.png"));
        processing(&path, store, f)?;
        written.push(path.display().to_string());
    }
    if !f.latency_ms.is_empty() {
        let path = dir.join(format!("bench-{store}-latency.png"));
        latency(&path, store, f)?;
        written.push(path.display().to_string());
    }
    if f.backlog.len() > 1 {
        let path = dir.join(format!("bench-{store}-backlog.png"));
        backlog(&path, store, f)?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

fn processing(path: &Path, store: &str, f: &Figures) -> Res {
    let root = BitMapBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let x_max = f.processing.iter().map(|p| p.0).max().unwrap_or(1).max(2) as f64 * 1.5;
    let y_top = f.processing.iter().map(|p| p.1).chain(f.ceiling).fold(1.0, f64::max) * 1.15;
    let mut chart = ChartBuilder::on(&root)
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .caption(format!("{store}: processing rate against concurrency"), ("sans-serif", 20))
        .build_cartesian_2d((0.8f64..x_max).log_scale(), 0.0..y_top)?;
    chart
        .configure_mesh()
        .x_desc("concurrency (handlers running at once)")
        .y_desc("no-op tasks per second")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", 14))
        .draw()?;
    let points: Vec<(f64, f64)> = f.processing.iter().map(|(c, r)| (*c as f64, *r)).collect();
    chart
        .draw_series(LineSeries::new(points.clone(), BLUE.stroke_width(2)))?
        .label("processed (claim, run, finish)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLUE.stroke_width(2)));
    // Each measured point: a dot, its rate written above it.
    chart.draw_series(points.iter().map(|p| {
        EmptyElement::at(*p)
            + Circle::new((0, 0), 4, BLUE.filled())
            + Text::new(format!("{:.0}/s", p.1), (-20, -22), ("sans-serif", 13).into_font())
    }))?;
    if let Some(ceiling) = f.ceiling {
        chart
            .draw_series(LineSeries::new([(0.8, ceiling), (x_max, ceiling)], RED.stroke_width(1)))?
            .label(format!("ceiling: redis-benchmark SET, {ceiling:.0}/s"))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], RED.stroke_width(1)));
    }
    chart.configure_series_labels().background_style(WHITE).border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}

fn latency(path: &Path, store: &str, f: &Figures) -> Res {
    let mut sorted = f.latency_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    // The chart ends at the 99.9th percentile; the rest is named below it.
    let cut = sorted[((n - 1.0) * 0.999).round() as usize].max(0.01);
    let root = BitMapBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .caption(
            format!("{store}: submit → handler start at {}/s ({} tasks)", f.latency_rate, sorted.len()),
            ("sans-serif", 20),
        )
        .build_cartesian_2d(0.0..cut * 1.05, 0.0..1.0)?;
    chart
        .configure_mesh()
        .x_desc("milliseconds")
        .y_desc("fraction of tasks started within")
        .x_label_formatter(&|x| format!("{x:.2}"))
        .y_label_formatter(&|y| format!("{:.0} %", y * 100.0))
        .label_style(("sans-serif", 14))
        .draw()?;
    let cdf: Vec<(f64, f64)> = sorted
        .iter()
        .enumerate()
        .filter(|(_, v)| **v <= cut)
        .map(|(i, v)| (*v, (i + 1) as f64 / n))
        .collect();
    chart.draw_series(LineSeries::new(cdf, BLUE.stroke_width(2)))?;
    for (q, color) in [(0.5, &GREEN), (0.99, &RED)] {
        let v = sorted[((n - 1.0) * q).round() as usize];
        chart
            .draw_series(LineSeries::new([(v, 0.0), (v, q)], color.stroke_width(1)))?
            .label(format!("p{:.0}: {v:.2} ms", q * 100.0))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(1)));
    }
    chart.configure_series_labels().position(SeriesLabelPosition::LowerRight).border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}

fn backlog(path: &Path, store: &str, f: &Figures) -> Res {
    let root = BitMapBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let x_min = f.backlog.iter().map(|p| p.0).min().unwrap_or(1).max(1) as f64 / 2.0;
    let x_max = f.backlog.iter().map(|p| p.0).max().unwrap_or(1).max(2) as f64 * 2.0;
    let y_top = f.backlog.iter().map(|p| p.1).fold(1.0, f64::max) * 1.2;
    let mut chart = ChartBuilder::on(&root)
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .caption(
            format!("{store}: processing rate (concurrency 64) against tasks queued"),
            ("sans-serif", 20),
        )
        .build_cartesian_2d((x_min..x_max).log_scale(), 0.0..y_top)?;
    chart
        .configure_mesh()
        .x_desc("tasks queued when the run starts")
        .y_desc("no-op tasks per second")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", 14))
        .draw()?;
    let points: Vec<(f64, f64)> = f.backlog.iter().map(|(n, r)| (*n as f64, *r)).collect();
    chart.draw_series(LineSeries::new(points.clone(), BLUE.stroke_width(2)))?;
    // Each measured point: a dot, its rate written above it.
    chart.draw_series(points.iter().map(|p| {
        EmptyElement::at(*p)
            + Circle::new((0, 0), 4, BLUE.filled())
            + Text::new(format!("{:.0}/s", p.1), (-20, -22), ("sans-serif", 13).into_font())
    }))?;
    root.present()?;
    Ok(())
}
