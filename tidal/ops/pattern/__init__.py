"""Row pattern matching: Trill's Detect, SQL's MATCH_RECOGNIZE.

:mod:`.syntax` parses patterns and compiles them to an automaton's program, :mod:`.conditions`
holds variable conditions and measures, :mod:`.detect` the operator (its docstring states the
temporal semantics).
"""
