"""The Lambda entry points (``Handlers`` in the contract names them): thin, over the runtime and the replay domain."""
