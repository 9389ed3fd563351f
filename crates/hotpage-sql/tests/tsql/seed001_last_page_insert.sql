-- Seed 001, "Last-Page Insert Contention in SQL Server" (Alpay Kurbaloğlu, Trendyol Tech,
-- 2021-12-03): the V1-V6 table scripts, the memory-optimized filegroup and the wait-stats
-- reset, in the article's order. The text is seed001_as_published.txt (the article as
-- stored, where the page's text extraction lost the line breaks: 'NOT NULLCONSTRAINT',
-- ') GOALTER') with those line breaks put back, and nothing else changed (a test checks
-- that the two are equal once blanks and these comment lines are removed).
CREATE TABLE [dbo].[TestTable_V1]([Id] [bigint] IDENTITY(1,1) NOT NULL,[Status] [nvarchar](max) NOT NULL,[CreateDate] [datetime] NOT NULL
CONSTRAINT [PK_TestTable_V1] PRIMARY KEY CLUSTERED([Id] ASC) ) 
GO
ALTER TABLE [dbo].[TestTable_V1] ADD CONSTRAINT [DF_TestTable_V1_CreateDate] DEFAULT (sysdatetime()) FOR [CreateDate]
GO
DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR);
GO
CREATE TABLE [dbo].[TestTable_V2]([Id] [bigint] IDENTITY(1,1) NOT NULL,[Status] [nvarchar](max) NOT NULL,[CreateDate] [datetime] NOT NULL
CONSTRAINT [PK_TestTable_V2] PRIMARY KEY CLUSTERED([Id] ASC)WITH (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON)) 
GO
ALTER TABLE [dbo].[TestTable_V2] ADD  CONSTRAINT [DF_TestTable_V2_CreateDate]  DEFAULT (sysdatetime()) FOR [CreateDate]
GO
CREATE TABLE [dbo].[TestTable_V3]([Id] [bigint] IDENTITY(1,1) NOT NULL,[Status] [nvarchar](max) NOT NULL,[CreateDate] [datetime] NOT NULL
CONSTRAINT [PK_TestTable_V3] PRIMARY KEY NONCLUSTERED([Id] ASC) ) 
GO
ALTER TABLE [dbo].[TestTable_V3] ADD  CONSTRAINT [DF_TestTable_V3_CreateDate]  DEFAULT (sysdatetime()) FOR [CreateDate]
GO
CREATE TABLE [dbo].[TestTable_V4]([Id] [uniqueidentifier] NOT NULL,[Status] [nvarchar](max) NOT NULL,[CreateDate] [datetime] NOT NULL,CONSTRAINT [PK_TestTable_V4] PRIMARY KEY CLUSTERED([Id] ASC))
GO
ALTER TABLE [dbo].[TestTable_V4] ADD  DEFAULT (newid()) FOR [Id]
GO
ALTER TABLE [dbo].[TestTable_V4] ADD  CONSTRAINT [DF_TestTable_V4_CreateDate]  DEFAULT (sysdatetime()) FOR [CreateDate]
GO
CREATE TABLE [dbo].[TestTable_V5]([Id] [bigint] IDENTITY(1,1) NOT NULL,[Status] [nvarchar](max) NOT NULL,[CreateDate] [datetime] NOT NULL,[HashValue]  AS (CONVERT([tinyint],abs([Id])%(16))) PERSISTED NOT NULL,CONSTRAINT [PK_TestTable_V5] PRIMARY KEY CLUSTERED([HashValue] ASC, [Id] ASC) ) 
GO
ALTER TABLE [dbo].[TestTable_V5] ADD  CONSTRAINT [DF_TestTable_V5_CreateDate]  DEFAULT (sysdatetime()) FOR [CreateDate]
GO
ALTER DATABASE TestDB
ADD FILEGROUP TestDB_mod CONTAINS MEMORY_OPTIMIZED_DATA;
ALTER DATABASE TestDB ADD FILE (name='TestDB_mod1',filename='D:\DATA\TestDB') TO FILEGROUP TestDB_mod
CREATE TABLE [dbo].[TestTable_V6]([Id] [bigint] IDENTITY(1,1) NOT NULL,[Status] [nvarchar](max) NOT NULL,[CreateDate] [datetime] NOT NULL,CONSTRAINT [PK_TestTable_V6] PRIMARY KEY NONCLUSTERED([Id] ASC))  WITH (MEMORY_OPTIMIZED = ON,DURABILITY = SCHEMA_AND_DATA)
GO
ALTER TABLE [dbo].[TestTable_V6] ADD  CONSTRAINT [DF_TestTable_V6_CreateDate]  DEFAULT (sysdatetime()) FOR [CreateDate]
GO
