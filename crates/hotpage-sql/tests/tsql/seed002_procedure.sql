-- Seed 002, "Heaps in SQL Server: Part 4 PFS contention", section "Unused memory on a data
-- page": the heap table and the stored procedure that inserts into it, as written (after its USE demo_db).
DROP TABLE IF EXISTS dbo.Customers;
GO
-- Create a demo table
CREATE TABLE dbo.Customers
(
   C1 INT               NOT NULL        IDENTITY (1, 1),
   C2 CHAR(2000)        NOT NULL        DEFAULT ('Testdata'),
);
GO
-- Create stored procedure for the INSERT process
CREATE OR ALTER PROC dbo.InsertCustomerData
        @NumOfRecords INT
AS
BEGIN
        WHILE @NumOfRecords > 0
        BEGIN
                INSERT INTO dbo.Customers
                (C2)
                DEFAULT VALUES;
                
                SET @NumOfRecords -= 1;
        END
END
GO
