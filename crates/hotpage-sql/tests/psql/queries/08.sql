SELECT relname FROM pg_catalog.pg_class WHERE relnamespace = 2200 INTERSECT SELECT relname FROM pg_catalog.pg_class WHERE relname LIKE '%s' ORDER BY 1
