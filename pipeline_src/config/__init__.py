"""The pipeline config: its layers read and merged (:mod:`.layers`), its JSON schema with the
defaults it fills in (:mod:`.schema`, ``config.schema.yaml``), and the blocks whose fields the code
declares, each with its default and rule (:mod:`.model_config`, :mod:`.influence_config`). The whole
check and loading, which runs every study's checks too, is :mod:`pipeline_src.planning.load_config`.
Every field is documented in config/README.md."""
