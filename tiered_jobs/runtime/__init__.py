"""The runtime the consumer and replay functions share (no CDK, nothing heavy at import)."""
