//! The soak's chart: stored tasks, store memory and processing rate over
//! time, one panel each, drawn with `plotters` into a PNG.

use examples::plot::register_font;
use plotters::prelude::*;

use crate::Sample;

/// One panel: its caption, line colour and points `(seconds, value)`.
type Panel<'a> = (&'a str, &'a RGBColor, Vec<(f64, f64)>);

/// Draws `samples` into `path` (1200 × 900).
pub(crate) fn chart(path: &str, title: &str, samples: &[Sample]) -> Result<(), Box<dyn std::error::Error>> {
    register_font()?;
    let root = BitMapBackend::new(path, (1200, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 22))?;
    let panels = root.split_evenly((3, 1));
    let t_max = samples.last().map_or(1.0, |s| s.t).max(1.0);
    let series: [Panel<'_>; 3] = [
        ("tasks stored", &BLUE, samples.iter().map(|s| (s.t, s.stored as f64)).collect()),
        (
            "store memory (MiB)",
            &RED,
            samples.iter().filter_map(|s| s.memory.map(|m| (s.t, m as f64 / 1_048_576.0))).collect(),
        ),
        ("processed per second", &GREEN, samples.iter().map(|s| (s.t, s.rate)).collect()),
    ];
    for (area, (name, color, points)) in panels.iter().zip(series) {
        let y_max = points.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.1;
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(80)
            .caption(name, ("sans-serif", 18))
            .build_cartesian_2d(0.0..t_max, 0.0..y_max)?;
        chart
            .configure_mesh()
            .x_desc("seconds")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .label_style(("sans-serif", 14))
            .draw()?;
        if points.is_empty() {
            continue;
        }
        chart.draw_series(LineSeries::new(points, color.stroke_width(2)))?;
    }
    root.present()?;
    Ok(())
}
