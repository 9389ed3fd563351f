//! The articles' own figures, as published, each with where it comes from. Nothing here
//! is measured: these are the numbers `repro` prints beside ours.

/// Seed 000, "PAGELATCH_EX waits and heavy inserts" (Pedro Lopes): 120 sessions x 99,999
/// inserts (11,999,880 rows), a quad-core hyper-threaded laptop with SSDs, SQL Server
/// 2012. From the summary table at its end ("Wait Statistics: Page Latch waits"
/// performance counter, and elapsed time mi:ss.ms).
pub mod s000 {
    /// Where the figures come from.
    pub const SOURCE: &str = "seed 000 (Pedro Lopes, \"PAGELATCH_EX waits and heavy inserts\"), the summary table at its end: Page Latch waits counter (avg) and elapsed time, 120 sessions x 99,999 rows on a quad-core hyper-threaded laptop";
    /// (table, seconds, page-latch waits avg, page-latch waits max).
    pub const ROWS: [(&str, f64, f64, f64); 3] = [
        ("HeavyInsert", 320.623, 226_726.0, 339_493.0),
        ("HeavyInsert_Hash", 133.055, 14_424.0, 52_879.0),
        ("HeavyInsert_BitReversal", 240.961, 2_124.0, 13_003.0),
    ];
    /// Sessions in the article.
    pub const SESSIONS: u32 = 120;
}

/// Seed 001, "Last-Page Insert Contention in SQL Server" (Alpay Kurbaloğlu, Trendyol
/// Tech, 2021): ostress -n200 -r10000, SQL Server 2019, 16 CPUs (the V5 hash is "the
/// number of CPUs on the system ... 16"). Seconds from each table's "It took ... to
/// complete 10000 iterations" (V1 01.46 is 106 s, as its conclusion says: "106 to 51
/// seconds").
pub mod s001 {
    /// Where the figures come from.
    pub const SOURCE: &str = "seed 001 (Alpay Kurbaloğlu, \"Last-Page Insert Contention in SQL Server\"): each table's \"It took ... to complete 10000 iterations\", ostress -n200 -r10000 on 16 CPUs; top waits from its top-wait screenshots as described in the text";
    /// (version, table, seconds, the top waits the article reports).
    pub const ROWS: [(&str, &str, f64, &str); 6] = [
        (
            "V1",
            "clustered identity",
            106.0,
            "WRITELOG, PAGELATCH_EX, PAGELATCH_SH",
        ),
        (
            "V2",
            "OPTIMIZE_FOR_SEQUENTIAL_KEY",
            105.0,
            "BTREE_INSERT_FLOW_CONTROL, PAGELATCH_EX",
        ),
        ("V3", "nonclustered PK (heap)", 88.0, "PAGELATCH_EX"),
        ("V4", "uniqueidentifier PK", 51.0, "WRITELOG"),
        ("V5", "(Id % 16, Id) PK", 50.0, "WRITELOG"),
        ("V6", "memory-optimized", 54.0, "WRITELOG"),
    ];
    /// Threads in the article.
    pub const SESSIONS: u32 = 200;
}

/// Seed 002, "Heaps in SQL Server: Part 4 PFS contention" (Uwe Ricken, Simple Talk, 2021).
pub mod s002 {
    /// Where the row-size figures come from.
    pub const SIZES_SOURCE: &str = "seed 002 (Uwe Ricken, \"Heaps in SQL Server: Part 4 PFS contention\"), the table under \"Workload when inserting records\": 10,000 rows of each record length into an empty heap, one session";
    /// (record length bytes, time ms, PFS updates, pages, avg used space %).
    pub const SIZES: [(usize, f64, f64, f64, f64); 7] = [
        (100, 157.0, 563.0, 149.0, 90.36),
        (200, 414.0, 1_397.0, 271.0, 95.26),
        (500, 441.0, 3_199.0, 777.0, 80.91),
        (1000, 595.0, 5_916.0, 1_436.0, 86.79),
        (2000, 920.0, 10_625.0, 3_339.0, 74.31),
        (3000, 1_138.0, 16_069.0, 5_004.0, 74.27),
        (4000, 1_459.0, 16_260.0, 5_000.0, 99.04),
    ];
    /// Rows per row size in the article.
    pub const SIZES_ROWS: u64 = 10_000;
    /// Where the session figures come from.
    pub const SESSIONS_SOURCE: &str = "seed 002, \"Figure 4: Dependence on processes to contention(s)\": PFS latch waits, their average duration and the runtime, by concurrent processes, each inserting 10,000 rows (one data file; the 4-file run is shown only as screenshots, without numbers)";
    /// (processes, PFS-contention waits, avg duration µs, runtime s).
    pub const SESSIONS: [(u32, f64, f64, f64); 7] = [
        (1, 0.0, 0.0, 4.28),
        (2, 1.0, 0.0, 5.65),
        (4, 1.0, 27.0, 7.68),
        (8, 7.0, 305.0, 13.45),
        (16, 7.0, 790.0, 23.83),
        (32, 16.0, 1_113.0, 55.93),
        (64, 68.0, 3_446.0, 165.72),
    ];
}

/// Seed 003, "Insert Performance Limitations with Sequentially Increasing Index" (Joe
/// Chang, 2016): single-row insert calls, sequential against spread keys.
pub mod s003 {
    /// Where the figures come from.
    pub const SOURCE: &str = "seed 003 (Joe Chang, \"Insert Performance Limitations with Sequentially Increasing Index\"), sections \"Testing Insert Performance\" and \"Comments\", and Thomas Grohser's report quoted at its start";
    /// (machine, sequential rows/s, spread rows/s).
    pub const ROWS: [(&str, f64, f64); 3] = [
        ("Xeon E3 v3, 1 socket, 4 cores + HT", 40_000.0, 71_000.0),
        (
            "Xeon E5 v4, 1 socket, 10 cores (preliminary)",
            30_000.0,
            100_000.0,
        ),
        ("4-socket system (Thomas Grohser)", 6_000.0, 95_000.0),
    ];
}

/// Seed 004, "Secret Scale Sauce: Heavy Singleton INSERT spinlocks" (Thomas Kejser): 64
/// SQLCMD sessions, each 2,500,000 rows in transactions of 1000 rows, a 64-core DL980 with
/// 8 FusionIO cards.
pub mod s004 {
    /// Where the figures come from.
    pub const SOURCE: &str = "seed 004 (Thomas Kejser, \"Secret Scale Sauce: Heavy Singleton INSERT spinlocks\"), its \"Observations\": 64 sessions on a 64-core DL980, transactions of 1000 rows (999 plus one autocommit, by the off-by-one its comments point out)";
    /// WRITELOG's share of wait time ("Largest wait is the WRITELOG wait (about 70%) – rest
    /// are PAGELATCH").
    pub const WRITELOG_PCT: f64 = 70.0;
    /// "at least 270.000 inserts/sec on this run".
    pub const ROWS_PER_S: f64 = 270_000.0;
    /// Sessions in the article.
    pub const SESSIONS: u32 = 64;
    /// Rows per transaction in the article.
    pub const BATCH: u32 = 1000;
}
