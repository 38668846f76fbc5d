"""Files: atomic writes, canonical JSON and hashing, OS errors in one line, ragged list columns.
Imports nothing of the package outside this folder."""
