"""Subcommands beyond ``decode``: each module has ``register(subparsers)`` and is listed in cli.COMMAND_MODULES."""
