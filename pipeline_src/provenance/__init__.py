"""Where each artifact came from: the provenance record written beside it (:mod:`.records`), the
code digest of the job that made it (:mod:`.code_digest`), the environment the workflow runs its
jobs in (:mod:`.environment`) and the check of every record against the files
(:mod:`.verify`). The sidecar files themselves are written and read by
:mod:`pipeline_src.storage.provenance`."""
