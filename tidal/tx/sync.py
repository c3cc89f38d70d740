"""Waiting between the threads of one state-access walk: an acquire load, a release store, a pause.

``tidal.tx.locked``'s threads hand records (``lock``) or partitions (``pat``) to each other in
timestamp order through counters: a thread waits until a counter reaches the number of earlier
transactions on the unit (``load_acquire`` in a loop, ``pause`` between tries, then
``sched_yield``: on a busy machine the thread it waits for may need the core), runs its
transaction, then publishes the new count (``store_release``). The loads and stores are atomic
(LLVM ``load atomic acquire`` / ``store atomic release``), so the compiler keeps the load inside the
loop and orders the transaction's writes before the count that hands them on.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _pointer(context, builder, aryty, ary, idx):
    array = context.make_array(aryty)(context, builder, ary)
    return cgutils.get_item_pointer(context, builder, aryty, array, [idx], wraparound=False)


@intrinsic
def load_acquire(typingctx, arr, idx):
    """``arr[idx]`` read atomically, with acquire ordering (an int64 array)."""

    def codegen(context, builder, sig, args):
        ptr = _pointer(context, builder, sig.args[0], args[0], args[1])
        return builder.load_atomic(ptr, ordering="acquire", align=8)

    return arr.dtype(arr, idx), codegen


@intrinsic
def store_release(typingctx, arr, idx, val):
    """``arr[idx] = val`` written atomically, with release ordering (an int64 array)."""

    def codegen(context, builder, sig, args):
        ptr = _pointer(context, builder, sig.args[0], args[0], args[1])
        value = context.cast(builder, args[2], sig.args[2], sig.args[0].dtype)
        builder.store_atomic(value, ptr, ordering="release", align=8)
        return context.get_dummy_value()

    return types.void(arr, idx, val), codegen


@intrinsic
def pause(typingctx):
    """The CPU's spin-wait hint (x86 ``pause``; nothing elsewhere)."""

    def codegen(context, builder, sig, args):
        if "86" in builder.module.triple:
            void = ir.FunctionType(ir.VoidType(), [])
            fn = cgutils.get_or_insert_function(builder.module, void, "llvm.x86.sse2.pause")
            builder.call(fn, [])
        return context.get_dummy_value()

    return types.void(), codegen


# the C library's sched_yield (resolved in the process when compiled: no address in the cache)
sched_yield = types.ExternalFunction("sched_yield", types.int32())
SPINS = 64  # pauses before a waiting thread gives its core away (another thread, maybe the one it waits for)
# the C library's usleep: a thread that has waited long (``YIELDS`` yields) sleeps, so that on a machine
# busy with other work it stops taking turns from the thread it waits for
usleep = types.ExternalFunction("usleep", types.int32(types.uint32))
YIELDS = 64
