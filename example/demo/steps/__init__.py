"""The demo's steps, one module each, in the order ``example/demo/story.py`` runs them. A step is a
function of the :class:`example.demo.context.Demo`: it publishes, waits for the embedded AWS, and
checks what it claims with ``demo.expect``."""
