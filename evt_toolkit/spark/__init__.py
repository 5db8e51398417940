"""spark layer."""
