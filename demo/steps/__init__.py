"""The demo's steps, one module each, in the order ``demo/story.py`` runs them. A step is a
function of the :class:`demo.context.Demo`: it publishes, waits for the embedded AWS, and
checks what it claims with ``demo.expect``."""
