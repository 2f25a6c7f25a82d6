"""Studies above the engine: the default benchmark, tables and ranks of stored runs, the HTML report, the routing and learned studies.

Private: reach them through the command line (``frameselect bench``, ``table``, ``ranks``, ``report``, ``route-report``, ``train``).
"""
