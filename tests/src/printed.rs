//! A table a plugin printed, read by column name as a person reads it: a test says
//! `row["FREE"]`, not the fifth whitespace-separated word (which shifts when a cell holds a
//! space, such as `MIG mixed` or `TOTAL (4 nodes)`, or when a column is added).

use std::ops::Index;

/// A printed table: the header's column names and each row's cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrintedTable {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Where each column starts on the header line: at 0, and wherever a word follows two or
/// more spaces (a header name may hold one space: `POOL LABELS`). Char positions.
fn column_starts(header: &str) -> Vec<usize> {
    let chars: Vec<char> = header.chars().collect();
    let mut starts = Vec::new();
    for i in 0..chars.len() {
        let after_gap = i >= 2 && chars[i - 1] == ' ' && chars[i - 2] == ' ';
        if chars[i] != ' ' && (i == 0 || after_gap) {
            starts.push(i);
        }
    }
    starts
}

impl PrintedTable {
    /// Reads the table in `text` from its header, the first line that starts with
    /// `first_column` (`NAME`, `NAMESPACE`...): the lines after it up to the first blank one
    /// are its rows.
    pub fn parse(text: &str, first_column: &str) -> Self {
        let mut lines = text.lines().skip_while(|l| !l.starts_with(first_column));
        let header_line = lines
            .next()
            .unwrap_or_else(|| panic!("no table headed {first_column} in:\n{text}"));
        let starts = column_starts(header_line);
        let cell = |line: &[char], i: usize| -> String {
            let from = starts[i].min(line.len());
            let to = starts
                .get(i + 1)
                .copied()
                .unwrap_or(line.len())
                .min(line.len());
            line[from..to].iter().collect::<String>().trim().to_string()
        };
        let header_chars: Vec<char> = header_line.chars().collect();
        let header = (0..starts.len()).map(|i| cell(&header_chars, i)).collect();
        let rows = lines
            .take_while(|l| !l.trim().is_empty())
            .map(|l| {
                let chars: Vec<char> = l.chars().collect();
                (0..starts.len()).map(|i| cell(&chars, i)).collect()
            })
            .collect();
        PrintedTable { header, rows }
    }

    fn index_of(&self, column: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == column)
            .unwrap_or_else(|| panic!("no column {column} in {:?}", self.header))
    }

    /// Every row, by name.
    pub fn all_rows(&self) -> Vec<Row<'_>> {
        self.rows
            .iter()
            .map(|cells| Row { table: self, cells })
            .collect()
    }

    /// The cells of `column`, top to bottom.
    pub fn column(&self, column: &str) -> Vec<&str> {
        let i = self.index_of(column);
        self.rows.iter().map(|r| r[i].as_str()).collect()
    }

    /// The one row whose cells equal each `(column, value)`; panics with the table if none
    /// or several do.
    pub fn row(&self, matching: &[(&str, &str)]) -> Row<'_> {
        let found: Vec<Row> = self
            .all_rows()
            .into_iter()
            .filter(|r| matching.iter().all(|(c, v)| &r[*c] == *v))
            .collect();
        assert_eq!(
            found.len(),
            1,
            "{} rows match {matching:?} in {self:#?}",
            found.len()
        );
        found.into_iter().next().expect("one row")
    }
}

/// One row of a [`PrintedTable`]: `row["FREE"]`.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    table: &'a PrintedTable,
    cells: &'a [String],
}

impl Row<'_> {
    /// The cells of `columns`, in that order.
    pub fn cells(&self, columns: &[&str]) -> Vec<&str> {
        columns.iter().map(|c| &self[*c]).collect()
    }
}

impl Index<&str> for Row<'_> {
    type Output = str;

    fn index(&self, column: &str) -> &str {
        &self.cells[self.table.index_of(column)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "\
NAME             RESOURCE        CAPACITY  FREE  FORM       POOL LABELS  WARNINGS
gpu-mig-1        nvidia.com/gpu  0         0     MIG mixed  pool=a       
cpu-1            -               -         -     -          -            no accelerator: not a GPU node
TOTAL (2 nodes)  nvidia.com/gpu  0         0                             

context a: ignored
";

    #[test]
    fn cells_are_read_by_column_even_with_spaces_in_them() {
        let table = PrintedTable::parse(STATUS, "NAME");
        assert_eq!(
            table.header,
            [
                "NAME",
                "RESOURCE",
                "CAPACITY",
                "FREE",
                "FORM",
                "POOL LABELS",
                "WARNINGS"
            ]
        );
        assert_eq!(
            table.column("NAME"),
            ["gpu-mig-1", "cpu-1", "TOTAL (2 nodes)"]
        );
        let mig = table.row(&[("NAME", "gpu-mig-1")]);
        assert_eq!(mig.cells(&["FORM", "POOL LABELS"]), ["MIG mixed", "pool=a"]);
        assert_eq!(
            &table.row(&[("NAME", "cpu-1")])["WARNINGS"],
            "no accelerator: not a GPU node"
        );
        assert_eq!(&table.row(&[("NAME", "TOTAL (2 nodes)")])["FORM"], "");
    }
}
