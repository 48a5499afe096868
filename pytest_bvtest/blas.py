"""The BLAS's threads while a gate computes: one.

The gate's matrix products are small (a block of swaps or sign flips times a few topic vectors). On a 2-core CI
runner a second OpenBLAS thread saves no time and spins for as much CPU as the work itself: 1.6 to 2.0 s of CPU
against 0.9 to 1.0 s for a 2,000-topic gate. Each OpenBLAS library also spins a worker for about 0.1 s when it
starts, and numpy and scipy each bring their own: 0.22 s of a pytest session's CPU before its first gate.

Where the team's environment chooses the thread count (any of :data:`THREAD_VARIABLES`), it is left alone.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys

#: The variables a BLAS reads its thread count from (OpenBLAS: the first of its three that is set; MKL: its own).
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

# what numpy and scipy's BLAS libraries read when they load
_SET_AT_LOAD = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def chosen_by_environment() -> bool:
    """Whether the environment chooses the BLAS's thread count."""
    return any(variable in os.environ for variable in THREAD_VARIABLES)


def one_thread_for_this_process() -> None:
    """The ``bvtest`` command: its BLAS (and its ``-j`` workers', which inherit the environment) on one thread, set
    before numpy loads; nothing once numpy has loaded (its libraries read the variables once)."""
    if "numpy" not in sys.modules and not chosen_by_environment():
        for variable in _SET_AT_LOAD:
            os.environ[variable] = "1"


def import_on_one_thread(module: str) -> bool:
    """Import ``module`` (which loads numpy and scipy) with their BLAS libraries started on one thread, so that no
    worker spins at their start; ``True`` when it did so, and the BLAS then stays on one thread until
    :func:`default_threads`. Imported plainly (``False``) when numpy has loaded already or the environment chooses
    the thread count."""
    if "numpy" in sys.modules or chosen_by_environment():
        importlib.import_module(module)
        return False
    for variable in _SET_AT_LOAD:
        os.environ[variable] = "1"
    try:
        importlib.import_module(module)
    finally:
        for variable in _SET_AT_LOAD:
            del os.environ[variable]
    return "numpy" in sys.modules


def default_threads() -> None:
    """The BLAS's thread count back to the one it starts with when nothing chooses it (the processors this process
    may run on), after :func:`import_on_one_thread` started it on one: for the team's own tests of the session.
    Its workers start now, and spin as they do at any start."""
    from threadpoolctl import threadpool_limits

    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    threadpool_limits(limits=len(usable), user_api="blas")


def one_thread_while_computing() -> contextlib.AbstractContextManager:
    """The BLAS on one thread while a spec is evaluated (by pytest, the CLI in a process that loaded numpy before,
    or a library call), unless the environment chooses its thread count (threadpoolctl: numpy may have loaded
    before, and the team's own tests keep their threads)."""
    if chosen_by_environment():
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")
