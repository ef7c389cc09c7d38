"""``lostmid series``: the checkpoints of one training run, each against the same
random-init twins on the same inputs. Its options (``config``), the trajectory and the
verdict "deepens along the series" as pure functions (``trajectory``), the run
(``run``) and its figure (``plot``)."""
