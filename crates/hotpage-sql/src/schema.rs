//! A SQL table's schema (its columns, primary key and how a missing key is made), stored by
//! the engine as the table's opaque schema bytes, and the SQL objects that live in the
//! database's metadata bytes (sequences, hash-partitioned parents waiting for partitions).
//!
//! ```text
//! schema:   magic "HPS" | version u8 (1) | column_count u16
//!           per column: name str | type (SqlType::encode) | flags u8 (bit 0 NOT NULL)
//!                       | default str (SQL text; empty: none) | generated str (ditto)
//!           key_count u8 | per key column: column u16, encoding u8 (0 natural, 1 bucket)
//!           keygen tag u8 | params (below)
//! metadata: magic "HPM" | version u8 (1) | sequence_count u16 | per sequence:
//!             name str | start i64 | increment i64 | cache u32 | next i64 | owner str
//!           | pending_count u16 | per pending partitioned table: name str | create str
//!             | modulus u32 | remainders (u32 count, u32 each) | partition names (u32, str each)
//!           versions 2 and 3 only (written when there are T-SQL objects; version 1
//!           otherwise, so a database without them reads in older binaries):
//!           | tsql_count u16 | per T-SQL object: kind u8 (TsqlKind) | name str | text str
//!           version 3 is version 2 with the kinds 5 (a table's T-SQL definition) and 6 (a
//!           procedure): it is written only when one of those is there, so that a binary
//!           that reads version 2 refuses the file by its version, not by an unknown kind.
//! str: u16 length + UTF-8 bytes; integers little-endian.
//! ```
//! Defaults and generation expressions are kept as SQL text and compiled when the table is
//! loaded: the text is what `\d` shows, and the format need not encode expressions.

use crate::error::{SqlError, SqlResult, sqlstate};
use crate::key_codec::{KeyColumn, KeyEncoding};
use crate::types::SqlType;

const SCHEMA_MAGIC: &[u8; 3] = b"HPS";
const METADATA_MAGIC: &[u8; 3] = b"HPM";
/// The schema format this binary writes and reads.
pub(crate) const SCHEMA_VERSION: u8 = 1;

/// One column.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Column {
    pub name: String,
    pub ty: SqlType,
    pub not_null: bool,
    /// The DEFAULT expression's SQL text, if any.
    pub default: Option<String>,
    /// A `GENERATED ALWAYS AS (expr) STORED` column's expression text.
    pub generated: Option<String>,
}

/// How the engine makes a key that an INSERT does not give.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum KeyGen {
    /// The key must be given (a plain primary key).
    Supplied,
    /// An identity column (`GENERATED {ALWAYS|BY DEFAULT} AS IDENTITY`, serial): the
    /// engine's identity or session-range generator. `always`: a given value is an error.
    Identity { always: bool },
    /// `uuid DEFAULT gen_random_uuid()` (v4) or `uuidv7()`.
    Uuid { v7: bool },
    /// `DEFAULT nextval('seq')`, or `bit_reverse(nextval('seq'))`: the sequence is the
    /// table's generator.
    Sequence { name: String, bit_reverse: bool },
    /// `(bucket, id)` with `bucket GENERATED ALWAYS AS (id % buckets) STORED` and `id` an
    /// identity: the engine's hash-prefix generator.
    HashPrefix { buckets: u16, always: bool },
    /// No primary key: a heap whose row ids are hidden.
    RowId,
}

/// A table's schema.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TableSchema {
    pub columns: Vec<Column>,
    /// Primary-key columns (indexes into `columns`) in key order, with their encodings.
    pub key: Vec<(usize, KeyEncoding)>,
    pub keygen: KeyGen,
}

impl TableSchema {
    /// The key columns as the key codec takes them.
    pub fn key_columns(&self) -> Vec<KeyColumn> {
        self.key
            .iter()
            .map(|&(column, encoding)| KeyColumn {
                ty: self.columns[column].ty,
                encoding,
                nullable: false,
            })
            .collect()
    }

    /// Columns stored in the row (every column not in the key), in column order.
    pub fn row_columns(&self) -> Vec<usize> {
        (0..self.columns.len())
            .filter(|c| !self.key.iter().any(|(k, _)| k == c))
            .collect()
    }

    /// The column named `name` (names are stored folded as the DDL gave them).
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + 32 * self.columns.len());
        out.extend_from_slice(SCHEMA_MAGIC);
        out.push(SCHEMA_VERSION);
        put_u16(&mut out, self.columns.len() as u16);
        for column in &self.columns {
            put_str(&mut out, &column.name);
            column.ty.encode(&mut out);
            out.push(u8::from(column.not_null));
            put_str(&mut out, column.default.as_deref().unwrap_or(""));
            put_str(&mut out, column.generated.as_deref().unwrap_or(""));
        }
        out.push(self.key.len() as u8);
        for &(column, encoding) in &self.key {
            put_u16(&mut out, column as u16);
            out.push(match encoding {
                KeyEncoding::Natural => 0,
                KeyEncoding::BucketU16 => 1,
            });
        }
        encode_keygen(&self.keygen, &mut out);
        out
    }

    pub fn decode(bytes: &[u8]) -> SqlResult<TableSchema> {
        let mut r = Reader::new(bytes, "table schema");
        if r.take(3)? != SCHEMA_MAGIC {
            return Err(r.bad("no schema magic"));
        }
        let version = r.u8()?;
        if version != SCHEMA_VERSION {
            return Err(SqlError::new(
                sqlstate::DATA_CORRUPTED,
                format!(
                    "table schema format {version} is not one this binary reads ({SCHEMA_VERSION})"
                ),
            ));
        }
        let count = usize::from(r.u16()?);
        let mut columns = Vec::with_capacity(count);
        for _ in 0..count {
            columns.push(Column {
                name: r.string()?,
                ty: SqlType::decode(r.bytes, &mut r.at)?,
                not_null: r.u8()? != 0,
                default: Some(r.string()?).filter(|s| !s.is_empty()),
                generated: Some(r.string()?).filter(|s| !s.is_empty()),
            });
        }
        let key_count = usize::from(r.u8()?);
        let mut key = Vec::with_capacity(key_count);
        for _ in 0..key_count {
            let column = usize::from(r.u16()?);
            let encoding = match r.u8()? {
                0 => KeyEncoding::Natural,
                1 => KeyEncoding::BucketU16,
                _ => return Err(r.bad("unknown key encoding")),
            };
            if column >= columns.len() {
                return Err(r.bad("key column out of range"));
            }
            key.push((column, encoding));
        }
        let keygen = decode_keygen(&mut r)?;
        r.finish()?;
        Ok(TableSchema {
            columns,
            key,
            keygen,
        })
    }
}

fn encode_keygen(keygen: &KeyGen, out: &mut Vec<u8>) {
    match keygen {
        KeyGen::Supplied => out.push(0),
        KeyGen::Identity { always } => {
            out.push(1);
            out.push(u8::from(*always));
        }
        KeyGen::Uuid { v7 } => {
            out.push(2);
            out.push(u8::from(*v7));
        }
        KeyGen::Sequence { name, bit_reverse } => {
            out.push(3);
            put_str(out, name);
            out.push(u8::from(*bit_reverse));
        }
        KeyGen::HashPrefix { buckets, always } => {
            out.push(4);
            put_u16(out, *buckets);
            out.push(u8::from(*always));
        }
        KeyGen::RowId => out.push(5),
    }
}

fn decode_keygen(r: &mut Reader<'_>) -> SqlResult<KeyGen> {
    Ok(match r.u8()? {
        0 => KeyGen::Supplied,
        1 => KeyGen::Identity {
            always: r.u8()? != 0,
        },
        2 => KeyGen::Uuid { v7: r.u8()? != 0 },
        3 => KeyGen::Sequence {
            name: r.string()?,
            bit_reverse: r.u8()? != 0,
        },
        4 => KeyGen::HashPrefix {
            buckets: r.u16()?,
            always: r.u8()? != 0,
        },
        5 => KeyGen::RowId,
        _ => return Err(r.bad("unknown key generator")),
    })
}

/// A sequence (`CREATE SEQUENCE`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sequence {
    pub name: String,
    pub start: i64,
    pub increment: i64,
    pub cache: u32,
    /// The next value an unowned sequence hands out (persisted per cache refill).
    pub next: i64,
    /// The table whose key generator this sequence became (empty: none yet).
    pub owner: String,
}

/// A `PARTITION BY HASH` parent whose partitions are still being declared: its engine table
/// is created once every remainder of its modulus has a partition.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PendingPartitioned {
    pub name: String,
    /// The parent's CREATE TABLE statement, replayed once the partitions are complete.
    pub create_sql: String,
    /// 0 until the first partition names it.
    pub modulus: u32,
    pub remainders: Vec<u32>,
    pub partitions: Vec<String>,
}

/// What a [`TsqlObject`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TsqlKind {
    /// A user scalar function: its text is its `CREATE FUNCTION` statement.
    Function = 1,
    /// `CREATE PARTITION FUNCTION`: its text is the statement.
    PartitionFunction = 2,
    /// `CREATE PARTITION SCHEME`: its text is the statement.
    PartitionScheme = 3,
    /// A table made `ON` a partition scheme: name is the table, text the scheme's name.
    TableOnScheme = 4,
    /// A table's T-SQL definition (what `ALTER TABLE … ADD DEFAULT … FOR` and `CREATE
    /// CLUSTERED INDEX` amend): name is the table, text the definition as JSON.
    TableDefinition = 5,
    /// A stored procedure: its text is its `CREATE PROCEDURE` statement.
    Procedure = 6,
}

impl TsqlKind {
    fn from_u8(byte: u8) -> Option<TsqlKind> {
        Some(match byte {
            1 => TsqlKind::Function,
            2 => TsqlKind::PartitionFunction,
            3 => TsqlKind::PartitionScheme,
            4 => TsqlKind::TableOnScheme,
            5 => TsqlKind::TableDefinition,
            6 => TsqlKind::Procedure,
            _ => return None,
        })
    }
}

/// An object of the T-SQL front end that every session sees and that outlives a reopen,
/// kept as the T-SQL text that made it (parsed again when it is loaded).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TsqlObject {
    pub kind: TsqlKind,
    /// Lower case, without `dbo.`.
    pub name: String,
    pub text: String,
}

/// The SQL objects kept in the database's metadata bytes.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Metadata {
    pub sequences: Vec<Sequence>,
    pub pending: Vec<PendingPartitioned>,
    pub tsql: Vec<TsqlObject>,
}

/// The metadata version with T-SQL objects.
const METADATA_VERSION_TSQL: u8 = 2;
/// The metadata version with T-SQL table definitions or procedures among them.
const METADATA_VERSION_TSQL_TABLES: u8 = 3;

impl Metadata {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(METADATA_MAGIC);
        let newer_kinds = self
            .tsql
            .iter()
            .any(|o| matches!(o.kind, TsqlKind::TableDefinition | TsqlKind::Procedure));
        out.push(if self.tsql.is_empty() {
            SCHEMA_VERSION
        } else if newer_kinds {
            METADATA_VERSION_TSQL_TABLES
        } else {
            METADATA_VERSION_TSQL
        });
        put_u16(&mut out, self.sequences.len() as u16);
        for s in &self.sequences {
            put_str(&mut out, &s.name);
            out.extend_from_slice(&s.start.to_le_bytes());
            out.extend_from_slice(&s.increment.to_le_bytes());
            out.extend_from_slice(&s.cache.to_le_bytes());
            out.extend_from_slice(&s.next.to_le_bytes());
            put_str(&mut out, &s.owner);
        }
        put_u16(&mut out, self.pending.len() as u16);
        for p in &self.pending {
            put_str(&mut out, &p.name);
            put_str(&mut out, &p.create_sql);
            out.extend_from_slice(&p.modulus.to_le_bytes());
            out.extend_from_slice(&(p.remainders.len() as u32).to_le_bytes());
            for r in &p.remainders {
                out.extend_from_slice(&r.to_le_bytes());
            }
            out.extend_from_slice(&(p.partitions.len() as u32).to_le_bytes());
            for name in &p.partitions {
                put_str(&mut out, name);
            }
        }
        if !self.tsql.is_empty() {
            put_u16(&mut out, self.tsql.len() as u16);
            for object in &self.tsql {
                out.push(object.kind as u8);
                put_str(&mut out, &object.name);
                put_str(&mut out, &object.text);
            }
        }
        out
    }

    /// Decodes the metadata; empty bytes (a database no SQL has touched) is empty metadata.
    pub fn decode(bytes: &[u8]) -> SqlResult<Metadata> {
        if bytes.is_empty() {
            return Ok(Metadata::default());
        }
        let mut r = Reader::new(bytes, "database metadata");
        if r.take(3)? != METADATA_MAGIC {
            return Err(r.bad("no metadata magic"));
        }
        let version = r.u8()?;
        if ![
            SCHEMA_VERSION,
            METADATA_VERSION_TSQL,
            METADATA_VERSION_TSQL_TABLES,
        ]
        .contains(&version)
        {
            return Err(r.bad("a metadata version this binary does not read"));
        }
        let mut meta = Metadata::default();
        for _ in 0..r.u16()? {
            meta.sequences.push(Sequence {
                name: r.string()?,
                start: r.i64()?,
                increment: r.i64()?,
                cache: r.u32()?,
                next: r.i64()?,
                owner: r.string()?,
            });
        }
        for _ in 0..r.u16()? {
            let name = r.string()?;
            let create_sql = r.string()?;
            let modulus = r.u32()?;
            let count = r.u32()?.min(u32::from(u16::MAX));
            let mut remainders = Vec::new();
            for _ in 0..count {
                remainders.push(r.u32()?);
            }
            let count = r.u32()?.min(u32::from(u16::MAX));
            let mut partitions = Vec::new();
            for _ in 0..count {
                partitions.push(r.string()?);
            }
            meta.pending.push(PendingPartitioned {
                name,
                create_sql,
                modulus,
                remainders,
                partitions,
            });
        }
        if version != SCHEMA_VERSION {
            for _ in 0..r.u16()? {
                let kind = TsqlKind::from_u8(r.u8()?)
                    .filter(|k| version == METADATA_VERSION_TSQL_TABLES || (*k as u8) < 5)
                    .ok_or_else(|| r.bad("unknown T-SQL object"))?;
                meta.tsql.push(TsqlObject {
                    kind,
                    name: r.string()?,
                    text: r.string()?,
                });
            }
        }
        r.finish()?;
        Ok(meta)
    }
}

fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    // Names and expressions are far below 64 KiB (the engine refuses larger schemas).
    let len = s.len().min(usize::from(u16::MAX));
    put_u16(out, len as u16);
    out.extend_from_slice(&s.as_bytes()[..len]);
}

/// Reads the little-endian fields above; every shortfall is `data_corrupted`.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], what: &'static str) -> Reader<'a> {
        Reader { bytes, at: 0, what }
    }

    fn bad(&self, reason: &str) -> SqlError {
        SqlError::new(
            sqlstate::DATA_CORRUPTED,
            format!("{} is damaged at byte {}: {reason}", self.what, self.at),
        )
    }

    fn take(&mut self, n: usize) -> SqlResult<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len());
        let Some(end) = end else {
            return Err(self.bad("truncated"));
        };
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self) -> SqlResult<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> SqlResult<u8> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> SqlResult<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> SqlResult<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn i64(&mut self) -> SqlResult<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    fn string(&mut self) -> SqlResult<String> {
        let len = usize::from(self.u16()?);
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| self.bad("a name that is not UTF-8"))
    }

    fn finish(&self) -> SqlResult<()> {
        if self.at == self.bytes.len() {
            Ok(())
        } else {
            Err(self.bad("trailing bytes"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> TableSchema {
        TableSchema {
            columns: vec![
                Column {
                    name: "bucket".into(),
                    ty: SqlType::SmallInt,
                    not_null: true,
                    default: None,
                    generated: Some("id % 8".into()),
                },
                Column {
                    name: "id".into(),
                    ty: SqlType::BigInt,
                    not_null: true,
                    default: None,
                    generated: None,
                },
                Column {
                    name: "status".into(),
                    ty: SqlType::Varchar(Some(20)),
                    not_null: false,
                    default: Some("'CREATED'".into()),
                    generated: None,
                },
            ],
            key: vec![(0, KeyEncoding::BucketU16), (1, KeyEncoding::Natural)],
            keygen: KeyGen::HashPrefix {
                buckets: 8,
                always: true,
            },
        }
    }

    #[test]
    fn schemas_and_metadata_round_trip() {
        let schema = sample();
        assert_eq!(TableSchema::decode(&schema.encode()), Ok(schema.clone()));
        assert_eq!(schema.row_columns(), vec![2]);
        let meta = Metadata {
            sequences: vec![Sequence {
                name: "s".into(),
                start: 1,
                increment: 1,
                cache: 100,
                next: 201,
                owner: "t".into(),
            }],
            pending: vec![PendingPartitioned {
                name: "p".into(),
                create_sql: "CREATE TABLE p (id bigint) PARTITION BY HASH (id)".into(),
                modulus: 4,
                remainders: vec![0, 2],
                partitions: vec!["p0".into(), "p2".into()],
            }],
            tsql: Vec::new(),
        };
        assert_eq!(meta.encode()[3], SCHEMA_VERSION);
        assert_eq!(Metadata::decode(&meta.encode()), Ok(meta.clone()));
        let mut meta = meta;
        meta.tsql.push(TsqlObject {
            kind: TsqlKind::PartitionScheme,
            name: "ps".into(),
            text: "CREATE PARTITION SCHEME ps AS PARTITION pf ALL TO ([PRIMARY])".into(),
        });
        assert_eq!(meta.encode()[3], METADATA_VERSION_TSQL);
        assert_eq!(Metadata::decode(&meta.encode()), Ok(meta.clone()));
        // A version 2 file (an older binary's) reads as it was written.
        let older = meta.encode();
        meta.tsql.push(TsqlObject {
            kind: TsqlKind::TableDefinition,
            name: "t".into(),
            text: "{}".into(),
        });
        let newer = meta.encode();
        assert_eq!(newer[3], METADATA_VERSION_TSQL_TABLES);
        assert_eq!(Metadata::decode(&newer), Ok(meta.clone()));
        assert_eq!(older[3], METADATA_VERSION_TSQL);
        // Kind 5 under version 2 is damage: a version 2 writer never wrote it.
        let mut bad = newer.clone();
        bad[3] = METADATA_VERSION_TSQL;
        assert!(Metadata::decode(&bad).is_err());
        assert_eq!(Metadata::decode(&[]), Ok(Metadata::default()));
    }

    proptest! {
        #[test]
        fn damaged_schemas_and_metadata_are_errors_not_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
            cut in 0usize..200,
            flip in 0usize..200,
        ) {
            let _ = TableSchema::decode(&bytes);
            let _ = Metadata::decode(&bytes);
            let mut encoded = sample().encode();
            encoded.truncate(cut.min(encoded.len()));
            if let Some(byte) = encoded.get_mut(flip) {
                *byte ^= 0x5a;
            }
            let _ = TableSchema::decode(&encoded);
        }
    }
}
