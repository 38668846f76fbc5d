"""The pipeline config: its layers read and merged (:mod:`.layers`), its JSON schema with the
defaults it fills in (:mod:`.schema`, ``config.schema.yaml``), and the whole check and loading
(:mod:`.load`: :func:`~.load.load_config`). Every field is documented in config/README.md."""
