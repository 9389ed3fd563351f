use hotpage::{Database, MemStorage, Options, Storage};
use hotpage_sql::SqlDatabase;
use std::path::Path;
use std::sync::Arc;
#[test]
fn perf() {
    let mem: Arc<dyn Storage> = MemStorage::new(5);
    let engine = Database::open_with_storage(mem, Path::new("m"), Options::default()).unwrap();
    let db = SqlDatabase::new(Arc::new(engine)).unwrap();
    let mut s = db.session();
    let n: usize = std::env::var("N")
        .map(|v| v.parse().unwrap())
        .unwrap_or(300);
    for i in 0..n {
        s.execute(&format!(
            "CREATE TABLE t{i} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, a text, b int)"
        ))
        .unwrap();
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/psql/d_orders");
    for q in ["01", "02", "03", "04", "05", "06", "07", "08", "09"] {
        let text = std::fs::read_to_string(dir.join(format!("{q}.sql")))
            .unwrap()
            .replace("'16386'", "'16400'")
            .replace("^(orders)$", "^(t1)$");
        let t = std::time::Instant::now();
        let r = s.execute(&text).unwrap();
        println!("{q}: {:?} rows {}", t.elapsed(), r[0].rows.len());
    }
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/psql/d/01.sql"))
            .unwrap();
    let t = std::time::Instant::now();
    let r = s.execute(&text).unwrap();
    println!("\\d: {:?} rows {}", t.elapsed(), r[0].rows.len());
}
