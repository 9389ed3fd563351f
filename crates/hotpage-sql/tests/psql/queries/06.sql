SELECT s, s * 2 FROM pg_catalog.generate_series(1, 7, 3) s
