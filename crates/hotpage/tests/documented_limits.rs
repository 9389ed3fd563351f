//! The row limits that README.md and docs/design.md quote are the code's: the figures are
//! read from the documents and compared with `row_bytes_max` at 8 KiB pages, so the text
//! cannot drift from the code again (issue 9: the README said 2011 and 8107).

use hotpage::limits::{clustered_row_bytes_max, heap_row_bytes_max};

const PAGE_BYTES: usize = 8192;

fn document(relative: &str) -> String {
    let path = format!("{}/../../{relative}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// The number written just before `phrase`, which must occur exactly once in `text`.
fn number_before(text: &str, phrase: &str) -> usize {
    let found: Vec<usize> = text.match_indices(phrase).map(|(at, _)| at).collect();
    assert_eq!(found.len(), 1, "{phrase:?} occurs {} times", found.len());
    let before = text[..found[0]].trim_end();
    let digits_at = before
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |at| at + 1);
    before[digits_at..]
        .parse()
        .unwrap_or_else(|e| panic!("no number before {phrase:?}: {e}"))
}

#[test]
fn the_readme_quotes_the_row_limits_of_8_kib_pages() {
    let readme = document("README.md");
    assert_eq!(
        number_before(&readme, "bytes in a B+tree at 8 KiB pages"),
        clustered_row_bytes_max(PAGE_BYTES)
    );
    assert_eq!(
        number_before(&readme, "in a heap |"),
        heap_row_bytes_max(PAGE_BYTES)
    );
}

#[test]
fn the_design_notes_quote_the_b_tree_row_limit_of_8_kib_pages() {
    let design = document("docs/design.md");
    assert_eq!(
        number_before(&design, "bytes at 8 KiB pages: at least four records fit"),
        clustered_row_bytes_max(PAGE_BYTES)
    );
}
