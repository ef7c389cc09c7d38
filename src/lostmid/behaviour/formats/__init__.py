"""The field's files in and out: Liu et al.'s, RULER's and LongBench's records read by
``retrieve --data`` and written by ``--export`` (``records``; the files themselves in
``files``), lm-eval tasks (``lmeval``), and other tools' per-sample results read by
``lostmid score`` (``samples``)."""
