SELECT c.relname, i.indisprimary FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_index i ON i.indrelid = c.oid WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r','S') ORDER BY 1
