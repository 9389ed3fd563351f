SELECT t.n, length(t.n) FROM (SELECT relname AS n FROM pg_catalog.pg_class WHERE relnamespace = 2200) t WHERE t.n LIKE 'k%' ORDER BY 1
