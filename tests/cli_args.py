"""Command-line pieces several test modules share (tests/ is on sys.path through
tests/conftest.py)."""

SECTIONS_OFF = ["--train-steps", "0", "--behaviour-steps", "0", "--dose", "off"]
SECTIONS_OFF += ["--checkpoints", "off", "--real-behaviour", "off"]
"""``lostmid reproduce`` options that switch every optional section off (remedies are off
unless asked for): the core alone, the measured models against the theory."""
