"""Files: atomic writes, canonical JSON and hashing, Parquet tables checked against their schema."""
