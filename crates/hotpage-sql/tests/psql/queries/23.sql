SELECT conname, contype, conkey, conrelid::pg_catalog.regclass::text, condeferrable, convalidated FROM pg_catalog.pg_constraint WHERE connamespace = 2200 ORDER BY 1
