SELECT relname FROM pg_catalog.pg_class WHERE relname = ANY (ARRAY['kv', 'hp', 'nosuch']) ORDER BY 1
