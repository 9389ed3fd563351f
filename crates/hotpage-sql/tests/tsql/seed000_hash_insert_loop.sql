-- Seed 000: the insert loop into HeavyInsert_Hash, as written (each of the article's 120
-- sessions runs it).
 DECLARE @i int = 1
WHILE @i < 100000
BEGIN
    INSERT INTO dbo.HeavyInsert_Hash (col1) VALUES ('testing heavy')
    SET @i += 1
END;
GO
