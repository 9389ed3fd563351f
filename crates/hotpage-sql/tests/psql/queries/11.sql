SELECT relname FROM pg_catalog.pg_class WHERE relnamespace = 2200 AND relkind = 'r' AND oid NOT IN (SELECT indrelid FROM pg_catalog.pg_index) ORDER BY 1
