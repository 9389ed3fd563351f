-- Seed 002, section "Workload when inserting records": the guarded drop and the table,
-- as written.
IF OBJECT_ID(N'dbo.demo_table', N'U') IS NOT NULL
        DROP TABLE dbo.demo_table;
        GO
-- The size of the column C1 will change with every test!
CREATE TABLE dbo.demo_table (C1 CHAR(100) NOT NULL);
GO
