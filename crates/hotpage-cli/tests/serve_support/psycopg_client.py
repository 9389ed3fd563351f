import sys
from datetime import datetime, timezone
from decimal import Decimal
import psycopg2, psycopg2.errors
conn = psycopg2.connect(host="127.0.0.1", port=int(sys.argv[1]), user="tester", dbname="hotpage")
conn.autocommit = True
cur = conn.cursor()
cur.execute("CREATE TABLE p (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text, price numeric(10,2), at timestamptz, raw bytea)")
conn.autocommit = False
cur.execute("INSERT INTO p (name, price, at, raw) VALUES (%s, %s, %s, %s) RETURNING id",
            ("it's", Decimal("9.99"), datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc), psycopg2.Binary(b"\x00\xff")))
print("id", cur.fetchone()[0])
conn.commit()
cur.execute("INSERT INTO p (name) VALUES (%s)", ("rolled back",))
conn.rollback()
try:
    cur.execute("SELECT nope FROM p")
except psycopg2.errors.UndefinedColumn as e:
    print("error", e.pgcode, e.diag.message_primary)
conn.rollback()
cur.execute("SELECT id, name, price, at, raw FROM p ORDER BY id")
for row in cur.fetchall():
    print(row[0], row[1], row[2], row[3].isoformat(), bytes(row[4]).hex())
print("status", conn.get_transaction_status())
conn.close()
