//! AITER's CSV tables: the kernel lists next to the code objects and the tuned-config tables
//! with the times AMD measured (`aiter/configs/*tuned*.csv`), the cycle model's calibration data.
//!
//! The files are plain comma-separated values with a header row and no quoting (checked for the
//! files of [`super::WHEEL_VERSION`]); a quoted field is refused rather than misread.

use std::collections::HashMap;
use std::path::Path;

/// A CSV table: the header's column names and the rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows, as many fields each as there are columns.
    pub rows: Vec<Vec<String>>,
    index: HashMap<String, usize>,
}

/// Why a table cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TableError {
    /// The file could not be read.
    #[error("{path}: {err}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        err: std::io::Error,
    },
    /// A row or field the parser does not accept.
    #[error("{path}:{line}: {why}")]
    Format {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        why: String,
    },
}

impl Table {
    /// Reads `path`.
    ///
    /// # Errors
    /// [`TableError`] for an unreadable file, a quoted field or a row of the wrong width.
    pub fn read(path: &Path) -> Result<Table, TableError> {
        let text = std::fs::read_to_string(path).map_err(|err| TableError::Io { path: path.display().to_string(), err })?;
        Table::parse(&text, &path.display().to_string())
    }

    /// Parses CSV text (`name` for messages).
    ///
    /// # Errors
    /// As [`Table::read`].
    pub fn parse(text: &str, name: &str) -> Result<Table, TableError> {
        let bad = |line: usize, why: String| TableError::Format { path: name.to_string(), line, why };
        let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
        let (_, header) = lines.next().ok_or_else(|| bad(1, "no header row".into()))?;
        let columns: Vec<String> = header.split(',').map(|c| c.trim().to_string()).collect();
        let mut rows = Vec::new();
        for (i, l) in lines {
            if l.contains('"') {
                return Err(bad(i + 1, "quoted fields are not supported".into()));
            }
            let f: Vec<String> = l.split(',').map(|c| c.trim().to_string()).collect();
            if f.len() != columns.len() {
                return Err(bad(i + 1, format!("{} fields, the header has {}", f.len(), columns.len())));
            }
            rows.push(f);
        }
        let index = columns.iter().enumerate().map(|(i, c)| (c.clone(), i)).collect();
        Ok(Table { columns, rows, index })
    }

    /// Field `column` of row `row`, if the column exists.
    pub fn get<'a>(&'a self, row: &'a [String], column: &str) -> Option<&'a str> {
        self.index.get(column).and_then(|&i| row.get(i)).map(String::as_str)
    }
}
