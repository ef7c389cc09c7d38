"""The one exception type for mistakes a user can fix.

The CLI turns a :class:`UserError` into one line on stderr and exit code 2; any other
exception is a bug and keeps its traceback.
"""


class UserError(ValueError):
    """Bad input or an impossible request; the message says what was wrong and what to do."""


def require(condition: bool, message: str) -> None:
    """Raise :class:`UserError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise UserError(message)
