use super::*;

fn csv() -> CopyFormat {
    let mut format = CopyFormat::text();
    format.csv = true;
    format.delimiter = b',';
    format.null = String::new();
    format
}

fn records(format: &CopyFormat, chunks: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut reader = RecordReader::new();
    let mut out = Vec::new();
    for chunk in chunks {
        reader.pending.extend_from_slice(chunk);
        while let Some(record) = reader.next_record(format) {
            out.push(record);
        }
    }
    out.extend(reader.rest());
    out
}

#[test]
fn records_are_cut_across_chunks_and_a_last_line_end_is_optional() {
    let text = CopyFormat::text();
    assert_eq!(
        records(&text, &[b"1\ta\n2\t", b"b\r\n3", b"\tc"]),
        vec![b"1\ta".to_vec(), b"2\tb".to_vec(), b"3\tc".to_vec()]
    );
    // In CSV a quoted newline is inside the record.
    assert_eq!(
        records(&csv(), &[b"1,\"x\ny\"\n", b"2,z\n"]),
        vec![b"1,\"x\ny\"".to_vec(), b"2,z".to_vec()]
    );
}

#[test]
fn text_fields_undo_escapes_and_find_nulls() {
    let text = CopyFormat::text();
    let fields = text_fields(b"a\\tb\t\\N\t\\\\N\t\\101\\x41\\q", &text).unwrap();
    assert_eq!(
        fields,
        vec![
            Some("a\tb".to_string()),
            None,
            Some("\\N".to_string()),
            Some("AAq".to_string())
        ]
    );
    assert_eq!(text_fields(b"", &text).unwrap(), vec![Some(String::new())]);
}

#[test]
fn csv_fields_quote_and_null() {
    let format = csv();
    let fields = csv_fields(b"1,,\"\",\"a,\"\"b\"\"\",x y", &format).unwrap();
    assert_eq!(
        fields,
        vec![
            Some("1".to_string()),
            None,
            Some(String::new()),
            Some("a,\"b\"".to_string()),
            Some("x y".to_string())
        ]
    );
    let error = csv_fields(b"1,\"open", &format).unwrap_err();
    assert_eq!(error.sqlstate, sqlstate::BAD_COPY_FILE_FORMAT);
}

#[test]
fn written_records_read_back_the_same() {
    let values = vec![
        Some("tab\there".to_string()),
        None,
        Some("back\\slash, \"quoted\"\nline".to_string()),
        Some(String::new()),
    ];
    for format in [CopyFormat::text(), csv()] {
        let mut out = Vec::new();
        write_record(&values, &format, &mut out);
        let cut = records(&format, &[&out]);
        assert_eq!(cut.len(), 1, "{format:?}");
        let back = if format.csv {
            csv_fields(&cut[0], &format).unwrap()
        } else {
            text_fields(&cut[0], &format).unwrap()
        };
        assert_eq!(back, values, "{format:?}");
    }
}

#[test]
fn copy_booleans_are_spelled_for_the_parser() {
    assert_eq!(
        postgres_copy("copy pgbench_accounts from stdin with (freeze on)").as_deref(),
        Some("copy pgbench_accounts from stdin with ( freeze TRUE)")
    );
    assert_eq!(
        postgres_copy("COPY t FROM STDIN WITH (FORMAT csv, HEADER off);").as_deref(),
        Some("COPY t FROM STDIN WITH (FORMAT csv, HEADER FALSE)")
    );
    assert_eq!(postgres_copy("COPY t FROM STDIN WITH (HEADER true)"), None);
    assert_eq!(postgres_copy("SELECT 1"), None);
    for sql in [
        "copy t from stdin with (freeze on)",
        "COPY t (a, b) FROM STDIN WITH (FORMAT csv, HEADER 1)",
    ] {
        let rewritten = postgres_copy(sql).expect(sql);
        crate::session::parse(&rewritten).expect(&rewritten);
    }
}

#[test]
fn statements_after_copy_from_stdin_in_one_query_are_kept() {
    let statements =
        crate::session::parse("COPY w FROM STDIN; SELECT 1;\nINSERT INTO w VALUES (1)")
            .expect("parse");
    assert_eq!(statements.len(), 3, "{statements:?}");
    assert!(matches!(statements[0], Statement::Copy { .. }));
    assert_eq!(
        end_of_copy_from_stdin("SELECT ';'; copy t from stdin;x"),
        Some(30)
    );
    assert_eq!(end_of_copy_from_stdin("COPY t TO STDOUT; SELECT 1"), None);
    // A syntax error after the COPY points into the whole text.
    let error = crate::session::parse("COPY w FROM STDIN; SELEC 1").expect_err("syntax");
    assert!(error.position.is_some_and(|p| p > 19), "{error:?}");
}

/// A backslash takes the next byte as data in the text format: a backslash and a newline
/// are a newline inside the record (PostgreSQL's rule; it cut the record there), at a
/// chunk's end too, where the escaped byte comes in the next chunk.
#[test]
fn a_backslash_newline_is_inside_the_record_across_chunks() {
    let text = CopyFormat::text();
    assert_eq!(
        records(&text, &[b"1\tx\\\ny\n2\tz\n"]),
        vec![b"1\tx\\\ny".to_vec(), b"2\tz".to_vec()]
    );
    for cut in 1..b"1\tx\\\ny\n2\tz\n".len() {
        let (head, tail) = b"1\tx\\\ny\n2\tz\n".split_at(cut);
        assert_eq!(
            records(&text, &[head, tail]),
            vec![b"1\tx\\\ny".to_vec(), b"2\tz".to_vec()],
            "cut at {cut}"
        );
    }
    // An escaped backslash before a newline escapes nothing more.
    assert_eq!(
        records(&text, &[b"a\\\\", b"\nb\n"]),
        vec![b"a\\\\".to_vec(), b"b".to_vec()]
    );
    let fields = text_fields(b"1\tx\\\ny", &text).unwrap();
    assert_eq!(fields[1], Some("x\ny".to_string()));
    // In CSV, an escape inside quotes at a chunk's end escapes the next chunk's quote.
    let mut format = csv();
    format.escape = b'\\';
    assert_eq!(
        records(&format, &[b"1,\"a\\", b"\"\nb\"\n2,c\n"]),
        vec![b"1,\"a\\\"\nb\"".to_vec(), b"2,c".to_vec()]
    );
}

/// A delimiter a backslash escapes is data (`\;` with DELIMITER ';'): it was a field
/// boundary, so data holding the delimiter did not read back.
#[test]
fn an_escaped_delimiter_is_data_and_round_trips() {
    let mut format = CopyFormat::text();
    format.delimiter = b';';
    let fields = text_fields(b"5;p;\\;q", &format).unwrap();
    assert_eq!(
        fields,
        vec![Some("5".into()), Some("p".into()), Some(";q".into())]
    );
    let written = vec![Some("a;b".to_string()), None, Some("c\\;".to_string())];
    let mut out = Vec::new();
    write_record(&written, &format, &mut out);
    assert_eq!(out.pop(), Some(b'\n'));
    assert_eq!(text_fields(&out, &format).unwrap(), written);
}

proptest::proptest! {
    /// Any fields, written with any of the usual delimiters in either format and read back
    /// in chunks cut anywhere, are the same fields.
    #[test]
    fn any_records_read_back_through_any_chunks(
        rows in proptest::collection::vec(
            proptest::collection::vec(
                proptest::option::of("[a-c\\\\\t\n\r;|,\"N. ]{0,6}"),
                1..4,
            ),
            1..4,
        ),
        delimiter in proptest::sample::select(vec![b'\t', b',', b';', b'|']),
        csv_format in proptest::bool::ANY,
        cut in 0usize..200,
    ) {
        let mut format = if csv_format { csv() } else { CopyFormat::text() };
        format.delimiter = delimiter;
        let mut out = Vec::new();
        for row in &rows {
            write_record(row, &format, &mut out);
        }
        let cut = cut.min(out.len());
        let (head, tail) = out.split_at(cut);
        let cut_records = records(&format, &[head, tail]);
        proptest::prop_assert_eq!(cut_records.len(), rows.len());
        for (record, row) in cut_records.iter().zip(&rows) {
            let back = if format.csv {
                csv_fields(record, &format).unwrap()
            } else {
                text_fields(record, &format).unwrap()
            };
            proptest::prop_assert_eq!(&back, row);
        }
    }
}
