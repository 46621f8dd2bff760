"""Where the planner's emulations run: in this process, a local process pool, or a Dask cluster.

Each task is a whole, independent virtual-time emulation sweep for one candidate; nothing inside
an emulation touches these executors (the emulator's no-executor rule is about its event loop).
Dask distributed was chosen over Ray: it is pure Python, installs in seconds, and a
`LocalCluster` starts in about a second, so CI exercises the distributed path for real.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

Task = tuple[str, Callable[..., Any], tuple]  # (key, function, args)


def run_serial(tasks: Iterable[Task]) -> Iterator[tuple[str, Any]]:
    for key, fn, args in tasks:
        yield key, fn(*args)


CONNECT_TIMEOUT = "5s"  # no scheduler at the address: one line after this, not a long hang


class LocalPool:
    """A process pool kept across several batches of tasks (the planner's waves), so each batch
    does not pay for spawning workers again; one worker runs in this process."""

    def __init__(self, workers: int):
        self.workers = workers
        self._pool = None

    def run(self, tasks: list[Task]) -> Iterator[tuple[str, Any]]:
        if self.workers <= 1:
            yield from run_serial(tasks)
            return
        if self._pool is None:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor  # noqa: TID251

            self._pool = ProcessPoolExecutor(max_workers=self.workers,
                                             mp_context=mp.get_context("spawn"),
                                             initializer=_ignore_sigint)
        from concurrent.futures import as_completed  # noqa: TID251

        futs = {self._pool.submit(fn, *args): key for key, fn, args in tasks}
        try:
            for fut in as_completed(futs):
                yield futs[fut], fut.result()
        except Exception:  # a task failed: drop the queued ones. Not on Ctrl-C (or the
            # generator closed): terminate() ends the pool, and futures cancelled here race its
            # manager thread, which (CPython 3.11) then prints an InvalidStateError traceback
            for f in futs:
                f.cancel()
            raise

    def close(self) -> None:
        """Wait for the running tasks, drop the queued ones."""
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def terminate(self) -> None:
        """Stop now (Ctrl-C): the workers are killed with their tasks (a task's record is
        written only when it is whole, so a resume redoes just those). Waiting for them, as
        close() and the interpreter's exit do, took seconds."""
        if self._pool is not None:
            for proc in list(self._pool._processes.values()):  # no public API before 3.14
                proc.terminate()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the parent (a terminal sends it to the whole group: an idle
    worker would otherwise die printing a traceback)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def run_dask(tasks: list[Task], address: str | Any) -> Iterator[tuple[str, Any]]:
    """On an existing Dask cluster (`tcp://host:8786`) or a Client/LocalCluster object."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise RuntimeError("the Dask executor needs the optional extra: "
                           "pip install 'prfaas-tui[dask]'") from None
    client = address if isinstance(address, Client) else Client(address, timeout=CONNECT_TIMEOUT)
    own = client is not address
    try:
        futs = {client.submit(fn, *args, key=f"plan-{key}", pure=False): key
                for key, fn, args in tasks}
        for fut in as_completed(futs):
            yield futs[fut], fut.result()
    finally:
        if own:
            client.close()
