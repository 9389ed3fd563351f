use super::parse::{self, Stmt};

/// A batch's statements without their lines.
fn parse_batch(text: &str) -> crate::error::SqlResult<Vec<Stmt>> {
    Ok(parse::parse_batch(text)?
        .into_iter()
        .map(Stmt::into_unlocated)
        .collect())
}

#[test]
fn statements_keep_the_line_they_begin_on() {
    let stmts = parse::parse_batch(
        "DECLARE @i int = 1\n\nWHILE @i < 10\nBEGIN\n  SET @i += 1\n  PRINT @i END",
    )
    .unwrap();
    let lines: Vec<u32> = stmts
        .iter()
        .map(|s| match s {
            Stmt::At { line, .. } => *line,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(lines, [1, 3]);
    let Stmt::While { body, .. } = stmts[1].unlocated() else {
        panic!("{stmts:?}")
    };
    let Stmt::Block(inner) = body.unlocated() else {
        panic!("{body:?}")
    };
    assert!(matches!(&inner[0], Stmt::At { line: 5, .. }));
    assert!(matches!(&inner[1], Stmt::At { line: 6, .. }));
}

#[test]
fn a_while_body_without_semicolons_is_three_statements() {
    let stmts = parse_batch(
        "DECLARE @i int = 1\nWHILE @i < 10\nBEGIN\n INSERT INTO t (a) VALUES (1)\n SET @i += 1\nEND",
    )
    .unwrap();
    assert_eq!(stmts.len(), 2);
    let Stmt::While { body, .. } = &stmts[1] else {
        panic!("{stmts:?}")
    };
    let Stmt::Block(inner) = body.unlocated() else {
        panic!("{body:?}")
    };
    assert!(matches!(inner[0].unlocated(), Stmt::Plain(_)));
    assert!(matches!(
        inner[1].unlocated(),
        Stmt::SetVar { op: Some('+'), .. }
    ));
}

#[test]
fn if_else_and_drop_table_if_exists() {
    let stmts = parse_batch("IF 1 = 1 PRINT 'a' ELSE PRINT 'b' DROP TABLE IF EXISTS t").unwrap();
    assert_eq!(stmts.len(), 2);
    assert!(matches!(
        &stmts[0],
        Stmt::If {
            otherwise: Some(_),
            ..
        }
    ));
    assert!(matches!(&stmts[1], Stmt::Plain(t) if t.len() == 5));
}

#[test]
fn insert_select_is_one_statement_and_case_end_is_not_a_block_end() {
    let stmts = parse_batch(
        "BEGIN INSERT INTO t (a, b) SELECT CASE WHEN 1 = 1 THEN 2 ELSE 3 END, 'x' SELECT 1 END",
    )
    .unwrap();
    let Stmt::Block(inner) = &stmts[0] else {
        panic!("{stmts:?}")
    };
    assert_eq!(inner.len(), 2, "{inner:?}");
}

#[test]
fn syntax_errors() {
    for bad in [
        "BEGIN SELECT 1",
        "END",
        "WHILE",
        "IF 1 = 1",
        "SET @i",
        "DECLARE @i",
        "DECLARE @i int =",
        "ELSE PRINT 1",
        "SELECT @a = ",
    ] {
        let error = parse_batch(bad).expect_err(bad);
        assert_eq!(error.sqlstate, "42601", "{bad}: {error:?}");
    }
}

proptest::proptest! {
    #[test]
    fn the_parser_never_panics(text in "(?s).{0,200}") {
        let _ = parse_batch(&text);
    }

    #[test]
    fn the_parser_never_panics_on_t_sql_words(words in proptest::collection::vec(
        proptest::sample::select(vec![
            "BEGIN", "END", "IF", "ELSE", "WHILE", "SET", "@i", "+=", "=", "DECLARE", "int",
            "(", ")", ",", ";", "SELECT", "INSERT", "INTO", "t", "VALUES", "1", "CASE", "WHEN",
            "THEN", "TRAN", "COMMIT", "ROLLBACK", "PRINT", "EXISTS", "DROP", "TABLE", "GO",
            "N'x'", "[a]", "dbo", ".", "TOP", "OUTPUT", "INSERTED", "*", "DEFAULT", "NOT",
        ]),
        0..40,
    )) {
        let text = words.join(" ");
        let _ = parse_batch(&text);
        let _ = super::split_batches(&text.replace("GO", "\nGO\n"));
    }
}
