SELECT relname FROM pg_catalog.pg_class WHERE relnamespace = 2200 ORDER BY relname LIMIT 3 OFFSET 2
