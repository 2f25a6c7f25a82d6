"""The engine: the planner, budgets and scopes, the run and its loop, executors, replay.

Private: reach it through :func:`frameselect.evaluate`, ``frameselect.Frames`` / ``Tokens`` / ``Routed``,
``frameselect.OneVideo`` / ``AcrossVideos`` / ``Stream``, ``frameselect.RunOptions`` and ``frameselect.select``.
"""
