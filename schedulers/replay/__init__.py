"""Replay of a recorded schedule (issue 43): jobs start when the real machine started them."""
