"""``python -m frameselect.cli``: the ``frameselect`` command."""

import sys

from frameselect.cli import main

if __name__ == "__main__":
    sys.exit(main())
