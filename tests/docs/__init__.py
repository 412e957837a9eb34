"""The README's and docs/'s examples, run as written against local mode (see :mod:`tests.docs.blocks`)."""
