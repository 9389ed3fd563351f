SELECT relname FROM pg_catalog.pg_class WHERE relnamespace = 2200 AND relkind = 'r' AND relname <> ALL ('{kv,hp}') ORDER BY relname DESC
