//! `hotpage_objects` (T-SQL's `sys.objects`): the database's tables, sequences, user
//! functions and stored procedures, with the ids `OBJECT_ID()` gives and `OBJECT_NAME()`
//! takes ([`object_id`]).

use crate::error::SqlResult;
use crate::schema::TsqlKind;
use crate::session::SqlDatabase;
use crate::types::SqlType;
use crate::value::Value;

/// `dbo`'s schema_id in SQL Server: every object here is in it.
const DBO_SCHEMA_ID: i64 = 1;

/// An object's id: a stable hash (FNV-1a) of its name, positive like SQL Server's. Ids are
/// not stored: a name always has the same id, in every session and after a reopen.
pub(crate) fn object_id(name: &str) -> i64 {
    let hash = name.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    i64::from(hash & 0x7fff_ffff)
}

pub(super) fn columns() -> Vec<(&'static str, SqlType)> {
    vec![
        ("name", SqlType::Text),
        ("object_id", SqlType::Int),
        ("schema_id", SqlType::Int),
        ("parent_object_id", SqlType::Int),
        ("type", SqlType::Text),
        ("type_desc", SqlType::Text),
        ("is_ms_shipped", SqlType::Bool),
    ]
}

/// Tables (`U`), sequences (`SO`), scalar functions (`FN`) and procedures (`P`), by name.
/// SQL Server's `type` is `char(2)`, `'U '`; here it has no blank, so that `type IN
/// (N'U')` compares as SQL Server's trailing-blank rule makes it compare there.
fn all(db: &SqlDatabase) -> Vec<(String, &'static str, &'static str)> {
    let meta = db.metadata();
    let mut objects: Vec<(String, &str, &str)> = db
        .engine()
        .tables()
        .into_iter()
        .map(|t| (t.name, "U", "USER_TABLE"))
        .collect();
    objects.extend(
        meta.sequences
            .iter()
            .map(|s| (s.name.clone(), "SO", "SEQUENCE_OBJECT")),
    );
    objects.extend(meta.tsql.iter().filter_map(|o| match o.kind {
        TsqlKind::Function => Some((o.name.clone(), "FN", "SQL_SCALAR_FUNCTION")),
        TsqlKind::Procedure => Some((o.name.clone(), "P", "SQL_STORED_PROCEDURE")),
        _ => None,
    }));
    objects.sort();
    objects
}

/// The name of the object whose id is `id` (T-SQL's `OBJECT_NAME`, the SQL layer's
/// `hotpage_object_name`).
pub(crate) fn name_of(db: &SqlDatabase, id: i64) -> Option<String> {
    all(db)
        .into_iter()
        .map(|(name, _, _)| name)
        .find(|name| object_id(name) == id)
}

pub(super) fn rows(db: &SqlDatabase, _args: &[Value]) -> SqlResult<Vec<Vec<Value>>> {
    let objects = all(db);
    Ok(objects
        .into_iter()
        .map(|(name, ty, desc)| {
            let id = object_id(&name);
            vec![
                Value::Text(name),
                Value::Int(id),
                Value::Int(DBO_SCHEMA_ID),
                Value::Int(0),
                Value::Text(ty.to_string()),
                Value::Text(desc.to_string()),
                Value::Bool(false),
            ]
        })
        .collect())
}
