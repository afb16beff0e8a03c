"""Batches of tokenized rows cut to their longest row, and batches made in a child process."""
