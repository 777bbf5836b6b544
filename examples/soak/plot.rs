//! The soak's chart: stored tasks, store memory and processing rate over
//! time, one panel each, drawn with `plotters` into a PNG.

use plotters::{prelude::*, style::FontStyle};

use crate::Sample;

/// One panel: its caption, line colour and points `(seconds, value)`.
type Panel<'a> = (&'a str, &'a RGBColor, Vec<(f64, f64)>);

/// Fonts tried for the labels, in order (Debian's DejaVu and Liberation).
const FONTS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// Registers the first font found as plotters' `sans-serif`.
fn register_font() -> Result<(), Box<dyn std::error::Error>> {
    for path in FONTS {
        if let Ok(bytes) = std::fs::read(path) {
            // plotters keeps the font for the life of the process.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            return plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                .map_err(|_| format!("{path} is not a font plotters can read").into());
        }
    }
    Err(format!("no font for the chart labels; install fonts-dejavu-core (looked for {FONTS:?})").into())
}

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
