"""The names of the retrieval presets that remedies' ``--preset`` and reproduce's
``--behaviour-preset`` offer, in one place that imports nothing, so that those commands
stay free of torch and scipy for ``lostmid --help``; the presets themselves (these and
the depth presets of the dose-response) are
:data:`lostmid.behaviour.training.config.RETRIEVAL_PRESETS`."""

RETRIEVAL_PRESET_NAMES = ("retrieval-valley", "retrieval-tiny", "mqar-tiny", "retrieval-micro")
