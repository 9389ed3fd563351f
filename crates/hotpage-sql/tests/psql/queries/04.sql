SELECT c.relname, k FROM pg_catalog.pg_class c, pg_catalog.unnest(ARRAY[2,1]) k WHERE c.relname IN ('kv', 'hp') ORDER BY 1, 2
