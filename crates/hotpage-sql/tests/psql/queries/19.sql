SELECT table_catalog, table_schema, table_name, table_type, is_insertable_into, is_typed FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 3
