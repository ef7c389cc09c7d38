"""``python -m lostmid.cli``: the same entry point as the ``lostmid`` command."""

from lostmid.cli import main

main()
