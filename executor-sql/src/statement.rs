//! The statement files: each statement of a driver is a file under its
//! `sql/` folder, `sql/<module>/<what it does>.sql`, that starts with a
//! comment saying what it does and what its parameters are. [`sql!`] loads
//! one at compile time and leaves that comment out of the text sent.

/// The statement in the calling crate's `sql/<name>.sql`, without its
/// leading comment, as a `&'static str`.
#[macro_export]
macro_rules! sql {
    ($name:literal) => {{
        const TEXT: &str =
            $crate::body(include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/", $name, ".sql")));
        TEXT
    }};
}

/// `text` without its leading comment lines and the blank space around it.
pub const fn body(text: &str) -> &str {
    let b = text.as_bytes();
    let mut start = 0;
    loop {
        while start < b.len() && b[start].is_ascii_whitespace() {
            start += 1;
        }
        if start + 1 < b.len() && b[start] == b'-' && b[start + 1] == b'-' {
            while start < b.len() && b[start] != b'\n' {
                start += 1;
            }
        } else {
            break;
        }
    }
    let mut end = b.len();
    while end > start && b[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    let (_, rest) = text.split_at(start);
    rest.split_at(end - start).0
}

/// The statement files under `<root>/sql` whose name (`module/what`) no
/// `sql!("module/what")` in a file of `<root>/src` loads, nor a
/// `statement!("module/what")` of this crate (the statements the SQL core
/// runs on every dialect): a driver's unit test asserts there are none, so
/// no dead statement file stays. Also returns how many files there are.
pub fn unused_statement_files(root: &std::path::Path) -> (usize, Vec<String>) {
    let mut code = String::new();
    let mut dirs = vec![root.join("src"), std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                code.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    let mut files = Vec::new();
    let mut dirs = vec![root.join("sql")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "sql") {
                files.push(path);
            }
        }
    }
    let unused = files
        .iter()
        .filter_map(|path| {
            let name = path.strip_prefix(root.join("sql")).ok()?.with_extension("");
            let name = name.to_str()?.replace('\\', "/");
            let used = code.contains(&format!("sql!(\"{name}\")"))
                || code.contains(&format!("statement!(\"{name}\")"));
            (!used).then_some(name)
        })
        .collect();
    (files.len(), unused)
}

#[cfg(test)]
mod tests {
    use super::body;

    #[test]
    fn the_leading_comment_and_blank_space_are_left_out() {
        assert_eq!(
            body("-- what\n-- $1 ns\n\nSELECT 1\n  -- kept\nFROM t\n\n"),
            "SELECT 1\n  -- kept\nFROM t"
        );
        assert_eq!(body("SELECT 1"), "SELECT 1");
        assert_eq!(body("-- only a comment\n"), "");
        assert_eq!(body(""), "");
    }
}
