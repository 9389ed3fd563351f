SELECT c.relname, a.attname FROM pg_catalog.pg_attribute a RIGHT JOIN pg_catalog.pg_class c ON a.attrelid = c.oid AND a.attname = 'id' WHERE c.relnamespace = 2200 AND c.relkind = 'r' ORDER BY 1
