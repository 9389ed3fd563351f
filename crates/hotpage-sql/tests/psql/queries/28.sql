SELECT '{1,2,3}'::pg_catalog.int2[] || 4::smallint, ARRAY[1,2] || ARRAY[3], 'r'::"char", 'abc'::name, '{a,"b c"}'::text[], (ARRAY['x','y'])[2], pg_catalog.array_length(ARRAY[1,2,3], 1)
