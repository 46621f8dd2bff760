"""The one error type of bad user input outside the scenario files (a flag, a plan choice).

Kept in a leaf module so that the commands, the screens and the entry point can all raise and
catch it without importing each other."""


class UsageError(ValueError):
    """A bad command-line value; str() is the one line the user sees."""
