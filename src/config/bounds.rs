//! Bounds on user-shaped input: queue path depth and length, and how deep
//! configuration text may nest before it reaches the YAML parser.
//!
//! The queue bounds keep every walk of a queue tree short (recursive walks
//! stay within a few dozen frames); the nesting bound keeps the parser's
//! cost, which grows with the square of flow nesting, small.

/// Most levels a queue path may have, `root` counting as one. YuniKorn sets
/// no bound; real trees are a handful of levels deep. Each level nests the
/// JSON of the state dump and the queue REST views two deeper, and common
/// JSON readers stop at 128 (serde_json among them), so 32 keeps every
/// accepted tree readable.
pub const MAX_QUEUE_LEVELS: usize = 32;

/// Longest queue path in bytes, dots included.
pub const MAX_QUEUE_PATH_LEN: usize = 1024;

/// Deepest nesting of flow collections (`[`, `{`) in configuration text.
/// The YAML deserializer refuses more than 128 nested collections anyway;
/// this refuses them before the parser spends time on them.
pub const MAX_FLOW_NESTING: usize = 128;

/// Most distinct block indentation levels open at once in configuration
/// text. A queue level takes two (its `queues:` list and its map), so this
/// leaves room for the deepest tree the deserializer accepts.
pub const MAX_BLOCK_NESTING: usize = 256;

/// Refuses a queue path deeper or longer than the bounds, naming the bound.
pub fn check_queue_path(path: &str) -> Result<(), String> {
    if path.len() > MAX_QUEUE_PATH_LEN {
        return Err(format!(
            "queue path is {} bytes long, more than the {MAX_QUEUE_PATH_LEN} allowed",
            path.len()
        ));
    }
    let levels = path.split('.').count();
    if levels > MAX_QUEUE_LEVELS {
        return Err(format!(
            "queue path has {levels} levels, more than the {MAX_QUEUE_LEVELS} allowed"
        ));
    }
    Ok(())
}

/// Refuses a configured queue `level` levels deep (root is level 1).
pub fn check_queue_level(name: &str, level: usize) -> Result<(), String> {
    if level > MAX_QUEUE_LEVELS {
        return Err(format!(
            "queue {name} is nested {level} levels deep, more than the {MAX_QUEUE_LEVELS} allowed"
        ));
    }
    Ok(())
}

/// One linear pass over configuration text: refuses flow nesting deeper
/// than [`MAX_FLOW_NESTING`] and block indentation deeper than
/// [`MAX_BLOCK_NESTING`]. Brackets inside quotes and comments do not count;
/// the scan is deliberately simple and errs towards counting.
pub fn check_nesting(text: &str) -> Result<(), String> {
    let mut flow = 0usize;
    let mut indents: Vec<usize> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let body = line.trim_start_matches(' ');
        if flow == 0 && !body.is_empty() && !body.starts_with('#') {
            // Block structure: the stack of indentations still open. A list
            // item's dash opens a level of its own for the map after it.
            let mut indent = line.len() - body.len();
            let mut rest = body;
            loop {
                while indents.last().is_some_and(|&i| i > indent) {
                    indents.pop();
                }
                if indents.last() != Some(&indent) {
                    indents.push(indent);
                }
                match rest.strip_prefix("- ") {
                    Some(after) => {
                        let trimmed = after.trim_start_matches(' ');
                        indent += 2 + after.len() - trimmed.len();
                        rest = trimmed;
                    }
                    None => break,
                }
            }
            if indents.len() > MAX_BLOCK_NESTING {
                return Err(format!(
                    "configuration nests more than {MAX_BLOCK_NESTING} block levels deep (line {})",
                    n + 1
                ));
            }
        }
        let mut quote: Option<char> = None;
        let mut prev = ' ';
        for c in body.chars() {
            match (quote, c) {
                (Some(q), c) if c == q && !(q == '"' && prev == '\\') => quote = None,
                (Some(_), _) => {}
                (None, '#') if prev == ' ' || prev == '\t' => break,
                (None, '"' | '\'') => quote = Some(c),
                (None, '[' | '{') => {
                    flow += 1;
                    if flow > MAX_FLOW_NESTING {
                        return Err(format!(
                            "configuration nests flow collections ([ or {{) more than {MAX_FLOW_NESTING} levels deep (line {})",
                            n + 1
                        ));
                    }
                }
                (None, ']' | '}') => flow = flow.saturating_sub(1),
                _ => {}
            }
            prev = c;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_paths_at_the_bounds() {
        let deepest = std::iter::once("root".to_string())
            .chain((1..MAX_QUEUE_LEVELS).map(|i| format!("q{i}")))
            .collect::<Vec<_>>()
            .join(".");
        assert!(check_queue_path(&deepest).is_ok());
        let err = check_queue_path(&format!("{deepest}.x")).unwrap_err();
        assert!(
            err.contains("33 levels") && err.contains("32 allowed"),
            "{err}"
        );
        let long = format!("root.{}", vec!["a".repeat(60); 17].join("."));
        assert!(long.len() > MAX_QUEUE_PATH_LEN);
        let err = check_queue_path(&long).unwrap_err();
        assert!(err.contains("1024 allowed"), "{err}");
    }

    #[test]
    fn flow_nesting_is_bounded() {
        let ok = format!(
            "a: {}{}",
            "[".repeat(MAX_FLOW_NESTING),
            "]".repeat(MAX_FLOW_NESTING)
        );
        assert!(check_nesting(&ok).is_ok());
        let deep = format!("a: {}", "[".repeat(32_000));
        let err = check_nesting(&deep).unwrap_err();
        assert!(err.contains("flow collections"), "{err}");
        // Brackets in quotes and comments are text.
        let quoted = format!("a: \"{}\" # {}", "[".repeat(500), "{".repeat(500));
        assert!(check_nesting(&quoted).is_ok());
    }

    #[test]
    fn block_nesting_is_bounded() {
        let nest = |levels: usize| {
            (0..levels)
                .map(|i| format!("{}k{i}:", " ".repeat(i)))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert!(check_nesting(&nest(MAX_BLOCK_NESTING)).is_ok());
        let err = check_nesting(&nest(MAX_BLOCK_NESTING + 1)).unwrap_err();
        assert!(err.contains("block levels"), "{err}");
        // Dedenting closes levels again.
        let wide = (0..1000)
            .map(|i| format!("k{i}:\n  v: 1"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(check_nesting(&wide).is_ok());
    }
}
