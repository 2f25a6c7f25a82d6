"""Training and evaluating the learned selector (``frameselect train``); the selector itself and its checkpoints are :mod:`frameselect.learned`."""
