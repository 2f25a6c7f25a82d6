"""``python -m frameselect.cli``: the ``frameselect`` command."""

import sys

from frameselect.cli import main

sys.exit(main())
