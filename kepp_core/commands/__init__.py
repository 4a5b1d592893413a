"""``kepp`` command groups; each module has ``register(subparsers)``."""
