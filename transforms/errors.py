"""The one base of every error a user can cause: a bad flag, input file, schedule, target or device, or a requested
choice the compiled output does not show. Its message is one sentence; the command line catches this class once,
prints the sentence and exits with 2. A leaf module (no imports), so every layer, the GPU-side runner included, can
derive from it."""


class UserError(Exception):
    """An error the user can act on; `str(error)` is one sentence naming the value and the limit."""
