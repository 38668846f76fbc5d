"""Where each artifact came from, all of it here: the record written beside it (:mod:`.records`),
the sidecar files that hold it, written with the artifact, read back and traced upstream
(:mod:`.sidecars`), the code digest of the job that made it (:mod:`.code_digest`) and a chain's
check against the files as they are now (:mod:`.verify`)."""
