"""producers package."""
