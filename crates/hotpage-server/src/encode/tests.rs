//! Row and error encoding: the bytes clients read.

use super::*;
use hotpage_sql::SqlType;

fn columns(types: &[SqlType]) -> Vec<ColumnInfo> {
    types
        .iter()
        .enumerate()
        .map(|(i, ty)| ColumnInfo {
            name: format!("c{i}"),
            ty: *ty,
        })
        .collect()
}

fn encoded(message: PgWireBackendMessage) -> Vec<u8> {
    let mut buf = BytesMut::new();
    message.encode(&mut buf).unwrap();
    buf.to_vec()
}

#[test]
fn result_formats_follow_bind_rules() {
    use WireFormat::{Binary, Text};
    assert_eq!(result_formats(&[], 2).unwrap(), [Text, Text]);
    assert_eq!(result_formats(&[1], 3).unwrap(), [Binary, Binary, Binary]);
    assert_eq!(result_formats(&[0, 1], 2).unwrap(), [Text, Binary]);
    let err = result_formats(&[0, 1], 3).unwrap_err();
    assert_eq!(err.sqlstate, code::PROTOCOL_VIOLATION);
    assert!(err.message.contains("2 result formats"), "{}", err.message);
    assert_eq!(result_formats(&[2], 1).unwrap_err().sqlstate, "08P01");
    // No columns: any single code is fine (PostgreSQL accepts it too).
    assert!(result_formats(&[1], 0).unwrap().is_empty());
}

#[test]
fn data_rows_carry_lengths_nulls_and_each_format() {
    let cols = columns(&[SqlType::Int, SqlType::Text, SqlType::BigInt]);
    let row = [Value::Int(7), Value::Null, Value::Int(-1)];
    let formats = [WireFormat::Binary, WireFormat::Text, WireFormat::Text];
    let bytes = encoded(data_row(&row, &cols, &formats).unwrap());
    let mut expected = vec![b'D'];
    let body: Vec<u8> = [
        &3i16.to_be_bytes()[..],
        &4i32.to_be_bytes(),
        &7i32.to_be_bytes(),
        &(-1i32).to_be_bytes(),
        &2i32.to_be_bytes(),
        b"-1",
    ]
    .concat();
    expected.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    expected.extend_from_slice(&body);
    assert_eq!(bytes, expected);
    // A value that does not fit its column's binary form is an error, not a wrapped value.
    let err = data_row(
        &[Value::Int(1 << 40)],
        &columns(&[SqlType::Int]),
        &[WireFormat::Binary],
    )
    .unwrap_err();
    assert_eq!(err.sqlstate, "22003");
}

#[test]
fn row_description_names_oids_sizes_and_modifiers() {
    let cols = columns(&[SqlType::Varchar(Some(10)), SqlType::BigInt]);
    let PgWireBackendMessage::RowDescription(rd) =
        row_description(&cols, &[WireFormat::Text, WireFormat::Binary])
    else {
        panic!("not a RowDescription")
    };
    assert_eq!(rd.fields[0].type_id, 1043);
    assert_eq!(rd.fields[0].type_modifier, 14);
    assert_eq!(rd.fields[0].type_size, -1);
    assert_eq!(rd.fields[1].type_id, 20);
    assert_eq!(rd.fields[1].type_size, 8);
    assert_eq!(rd.fields[1].format_code, 1);
}

#[test]
fn errors_carry_every_field_and_no_nul() {
    let mut error = SqlError::new("23505", "duplicate key value\0 here")
        .with_detail("Key (id)=(1) already exists.")
        .with_hint("a hint");
    error.position = Some(12);
    let PgWireBackendMessage::ErrorResponse(response) = self::error(&error) else {
        panic!("not an ErrorResponse")
    };
    let field = |code: u8| {
        response
            .fields
            .iter()
            .find(|(c, _)| *c == code)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(field(b'S').as_deref(), Some("ERROR"));
    assert_eq!(field(b'C').as_deref(), Some("23505"));
    assert_eq!(field(b'M').as_deref(), Some("duplicate key value\\0 here"));
    assert_eq!(field(b'D').as_deref(), Some("Key (id)=(1) already exists."));
    assert_eq!(field(b'H').as_deref(), Some("a hint"));
    assert_eq!(field(b'P').as_deref(), Some("12"));
    let PgWireBackendMessage::ErrorResponse(fatal) = fatal("53300", "sorry") else {
        panic!("not an ErrorResponse")
    };
    assert!(fatal.fields.contains(&(b'S', "FATAL".to_string())));
}
