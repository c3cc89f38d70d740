"""The temporal model: time, events, batches, messages (see each module)."""

from .memory import tune_allocator

tune_allocator()
