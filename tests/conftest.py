import os

from hypothesis import settings

# "ci" (the default) draws the same examples every run, so a red CI names a defect that anyone can
# reproduce, not a draw; "explore" draws new ones each run and more of them: run it to hunt for bugs
# (what it finds becomes a fixed test), e.g. HYPOTHESIS_PROFILE=explore pytest tests/sql
settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("explore", max_examples=400, deadline=None)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(items):
    """Under "explore", a test's own ``@settings(max_examples=n)`` would cap it at ``n`` draws (an
    explicit setting wins over the profile): raise every such test to the profile's count at least."""
    if os.environ.get("HYPOTHESIS_PROFILE") != "explore":  # "ci"/"dev": each test keeps its own count
        return
    for item in items:
        test = getattr(item, "obj", None)
        own = getattr(test, "_hypothesis_internal_use_settings", None)
        if own is not None and own.max_examples < settings.default.max_examples:
            test._hypothesis_internal_use_settings = settings(own, max_examples=settings.default.max_examples)
