"""Where each artifact came from: the provenance record written beside it (:mod:`.records`), the
code digest of the job that made it (:mod:`.code_digest`) and the environment the workflow runs its
jobs in (:mod:`.environment`). The sidecar files themselves are written and read by
:mod:`pipeline_src.storage.provenance`; their check against the files is
:mod:`pipeline_src.runs.verify`."""
