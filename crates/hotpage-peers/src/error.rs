//! Why a peer target failed.

/// A peer engine refused an operation; `what` says which.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// SQLite failed.
    #[error("sqlite: {what}: {source}")]
    Sqlite {
        /// What the target was doing.
        what: &'static str,
        /// SQLite's error (its result code and message).
        #[source]
        source: rusqlite::Error,
    },
    /// RocksDB failed.
    #[cfg(feature = "rocksdb")]
    #[error("rocksdb: {what}: {source}")]
    Rocks {
        /// What the target was doing.
        what: &'static str,
        /// RocksDB's status.
        #[source]
        source: rocksdb::Error,
    },
    /// fjall failed.
    #[cfg(feature = "fjall")]
    #[error("fjall: {what}: {source}")]
    Fjall {
        /// What the target was doing.
        what: &'static str,
        /// fjall's error.
        #[source]
        source: fjall::Error,
    },
    /// A file or directory of the peer could not be made.
    #[error("{what}: {source}")]
    Io {
        /// What the target was doing.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl PeerError {
    pub(crate) fn sqlite(what: &'static str) -> impl FnOnce(rusqlite::Error) -> PeerError {
        move |source| PeerError::Sqlite { what, source }
    }

    #[cfg(feature = "rocksdb")]
    pub(crate) fn rocks(what: &'static str) -> impl FnOnce(rocksdb::Error) -> PeerError {
        move |source| PeerError::Rocks { what, source }
    }

    #[cfg(feature = "fjall")]
    pub(crate) fn fjall(what: &'static str) -> impl FnOnce(fjall::Error) -> PeerError {
        move |source| PeerError::Fjall { what, source }
    }
}
