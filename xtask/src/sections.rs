//! Marked sections of a Markdown file that a command owns: the text
//! between a begin and an end comment line, replaced as a whole so that a
//! report never overwrites what other commands or people wrote around it.

/// `doc` with the text between `begin` and `end` replaced by `section` (a
/// blank line is kept after the begin marker and before the end marker).
/// Fails unless each marker is there exactly once, in order.
pub(crate) fn replace_between(doc: &str, begin: &str, end: &str, section: &str) -> Result<String, String> {
    let (Some(b), Some(e)) = (doc.find(begin), doc.find(end)) else {
        return Err(format!("the markers {begin} and {end} are not both there"));
    };
    if doc.matches(begin).count() != 1 || doc.matches(end).count() != 1 {
        return Err("a marker is there more than once".into());
    }
    if e < b {
        return Err(format!("{end} comes before {begin}"));
    }
    let head = &doc[..b + begin.len()];
    let tail = &doc[e..];
    Ok(format!("{head}\n\n{}\n\n{tail}", section.trim()))
}

/// Writes `section` into `path` between `begin` and `end`: a new file gets
/// just the marked section; an existing one must hold the markers.
pub(crate) fn write_section(path: &std::path::Path, begin: &str, end: &str, section: &str) -> Result<(), String> {
    let text = match std::fs::read_to_string(path) {
        Ok(doc) => replace_between(&doc, begin, end, section).map_err(|e| format!("{}: {e}", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => format!("{begin}\n\n{}\n\n{end}\n", section.trim()),
        Err(e) => return Err(format!("reading {}: {e}", path.display())),
    };
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: &str = "<!-- x:begin -->";
    const E: &str = "<!-- x:end -->";

    #[test]
    fn a_new_file_gets_the_marked_section_and_an_existing_one_keeps_the_rest() {
        let dir = std::env::temp_dir().join(format!("xtask-sections-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("doc.md");
        let _ = std::fs::remove_file(&path);
        write_section(&path, B, E, "one").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{B}\n\none\n\n{E}\n"));
        std::fs::write(&path, format!("# T\n{B}\nold\n{E}\n## Kept\n")).unwrap();
        write_section(&path, B, E, "two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("# T\n{B}\n\ntwo\n\n{E}\n## Kept\n"));
        std::fs::write(&path, "no markers\n").unwrap();
        assert!(write_section(&path, B, E, "three").is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "no markers\n", "nothing is overwritten");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
