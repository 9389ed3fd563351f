SELECT relname FROM pg_catalog.pg_class WHERE relnamespace = 2200 AND relname !~* '^(ORDERS|EVENTS)' AND relname LIKE '_\_%' AND relname NOT ILIKE 'T%' ORDER BY 1
