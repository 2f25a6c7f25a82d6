"""CLI sub-commands, one module each (``add_parser(subparsers)``)."""
