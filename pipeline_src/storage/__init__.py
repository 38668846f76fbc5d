"""Files: atomic writes, canonical JSON and hashing, provenance records beside each artifact, Parquet
tables checked against their schema. Imports nothing of the package outside this folder."""
