"""This repository's app's story on the embedded AWS (``make demo``, ``python -m example.demo``)."""
