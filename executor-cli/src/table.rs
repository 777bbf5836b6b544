//! Human output: aligned columns and readable times.

use std::io::{self, Write};

use executor_core::Timestamp;

/// A table of text cells, printed with each column as wide as its widest cell.
#[derive(Debug)]
pub(crate) struct Table {
    /// The header row.
    header: Vec<String>,
    /// The body rows, each as long as the header.
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles.
    pub(crate) fn new(header: &[&str]) -> Self {
        Self { header: header.iter().map(|h| (*h).to_owned()).collect(), rows: Vec::new() }
    }

    /// Adds a row; missing cells print empty, extra ones are dropped.
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        let mut cells = cells;
        cells.resize(self.header.len(), String::new());
        self.rows.push(cells);
    }

    /// Writes the header and rows; the last column is not padded.
    pub(crate) fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
                if i + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<w$}  "));
                }
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

/// A store timestamp as RFC 3339 in UTC, to the millisecond.
pub(crate) fn time(t: Timestamp) -> String {
    i64::try_from(t.as_millis())
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map_or_else(|| format!("{} ms", t.as_millis()), |ts| format!("{ts:.3}"))
}

/// An optional timestamp, `-` when absent.
pub(crate) fn opt_time(t: Option<Timestamp>) -> String {
    t.map_or_else(|| "-".to_owned(), time)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_to_the_widest_cell() -> io::Result<()> {
        let mut table = Table::new(&["ID", "STATE"]);
        table.row(vec!["a-long-id".into(), "FAILED".into()]);
        table.row(vec!["b".into()]);
        let mut out = Vec::new();
        table.write(&mut out)?;
        assert_eq!(String::from_utf8_lossy(&out), "ID         STATE\na-long-id  FAILED\nb\n");
        Ok(())
    }

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(time(Timestamp::from_millis(1_700_000_000_123)), "2023-11-14T22:13:20.123Z");
        assert_eq!(opt_time(None), "-");
    }
}
