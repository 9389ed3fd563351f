SELECT c.relname FROM pg_catalog.pg_class c WHERE c.relnamespace = 2200 AND c.relkind = 'r' AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attrdef d WHERE d.adrelid = c.oid) ORDER BY 1
