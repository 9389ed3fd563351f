SELECT DISTINCT relkind FROM pg_catalog.pg_class WHERE relnamespace = 2200 ORDER BY 1
