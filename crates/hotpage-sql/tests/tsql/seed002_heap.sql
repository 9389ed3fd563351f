-- Seed 002, "Heaps in SQL Server: Part 4 PFS contention" (Simple Talk, 2021-01-05),
-- section "Unused memory on a data page": the heap table, as written.
DROP TABLE IF EXISTS dbo.Customers;
GO
-- Create a demo table
CREATE TABLE dbo.Customers
(
   C1 INT               NOT NULL        IDENTITY (1, 1),
   C2 CHAR(2000)        NOT NULL        DEFAULT ('Testdata'),
);
GO
