"""A request answered inline: run in the protocol's own callback, without a task of its own.

uvicorn starts every request as a task: a coroutine object, a task, the loop's turn to run its first step, and a
context switch back when it ends. An API call of the mock awaits nothing once its body is whole (no rule with a
latency, no change log to sync, no upstream): it reads its body, answers, and writes its reply in one go. The
protocol (process/connections.py) runs such a request's coroutine at once, in the callback that parsed the end of
its message, and the reply leaves before the callback returns.

When the coroutine does await something (a rule's latency, the change log's sync), `run` hands what is left of it
to a task (`finish`), which goes on exactly where it stopped: the request ends as it would have in its own task,
cancellation (the server stopping) included. Nothing is lost but the saving.
"""

import asyncio
import contextvars
import functools


def run(coroutine, loop, tasks, thrown=None):
    """Run `coroutine` (a request's run_asgi) until it ends or awaits; in the second case the rest of it runs as
    a task kept in `tasks` (the server's, which a stopping server waits for, then cancels). In a copy of the
    context, as a task would run it. `thrown`: an exception to resume it with instead (see `_ended`)."""
    context = contextvars.copy_context()
    try:
        if thrown is None:
            waiting = context.run(coroutine.send, None)
        else:
            waiting = context.run(coroutine.throw, thrown)
    except StopIteration:
        return
    except asyncio.CancelledError:               # it let the cancellation thrown in end it
        return
    task = loop.create_task(finish(coroutine, waiting), context=context)
    task.add_done_callback(functools.partial(_ended, coroutine, loop, tasks))
    tasks.add(task)


def _ended(coroutine, loop, tasks, task):
    """The task ended. A task cancelled before its first step never ran a line of `finish`, so the request did
    not hear of the cancellation: it is thrown in now, where the request waits."""
    tasks.discard(task)
    if task.cancelled() and coroutine.cr_frame is not None:
        run(coroutine, loop, tasks, asyncio.CancelledError())


async def finish(coroutine, waiting):
    """Drive `coroutine`, which yielded `waiting` (a future, or None for a bare turn of the loop), to its end: wait
    for what it waits for, then resume it, as the task it would have had does. A cancellation of this task reaches
    the coroutine: through the future it cancelled, or thrown in where the coroutine waits."""
    while True:
        error = None
        try:
            if waiting is None:
                await asyncio.sleep(0)
            else:
                waiting._asyncio_future_blocking = False    # taken, as a task takes what its coroutine yields
                await waiting
        except asyncio.CancelledError as cancelled:
            if waiting is None or not waiting.cancelled():
                error = cancelled               # the future went on: the coroutine hears of it here
        except Exception:
            if waiting is None or not waiting.done():
                raise
            # the future failed: resumed, the coroutine reads that itself
        try:
            waiting = coroutine.throw(error) if error is not None else coroutine.send(None)
        except StopIteration:
            return
