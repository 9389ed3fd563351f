SELECT relkind, count(*), min(relname), max(relname) FROM pg_catalog.pg_class WHERE relnamespace = 2200 AND relkind IN ('r', 'i', 'S') GROUP BY relkind HAVING count(*) > 1 ORDER BY relkind
