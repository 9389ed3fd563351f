SELECT seqrelid::pg_catalog.regclass::text, seqtypid::pg_catalog.regtype, seqstart, seqincrement, seqmax, seqmin, seqcache, seqcycle FROM pg_catalog.pg_sequence ORDER BY 1
