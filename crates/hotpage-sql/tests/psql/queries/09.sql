SELECT relname FROM pg_catalog.pg_class WHERE relnamespace = 2200 AND relkind IN ('r', 'i', 'S') EXCEPT SELECT relname FROM pg_catalog.pg_class WHERE relname LIKE '%pkey' ORDER BY 1
