"""Model-based quality estimation (COMET family) run in a private virtualenv as a worker process."""
