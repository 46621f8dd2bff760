"""The topology's solver error, in a module of its own so that the CLI can catch it without
importing scipy at start-up."""


class BoundError(RuntimeError):
    """HiGHS did not return an optimum (a numerical failure, never an infeasible program: Lambda
    = 0 with nothing routed is always feasible)."""
