"""The one exception type for mistakes a user can fix.

The CLI turns a :class:`UserError` into one line on stderr and exit code 2; any other
exception is a bug and keeps its traceback.
"""


class UserError(ValueError):
    """Bad input or an impossible request; the message says what was wrong and what to do."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C after the run has said, in one line, what it kept and how to resume: the
    CLI adds nothing (exit code 130). A plain :class:`KeyboardInterrupt` reaching the
    CLI gets its one line there (:data:`INTERRUPTED`)."""


INTERRUPTED = "interrupted; what finished is kept under --out: rerun the same command to resume"
"""What the CLI says on Ctrl-C when the run has not said more itself."""


def require(condition: bool, message: str) -> None:
    """Raise :class:`UserError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise UserError(message)
