"""Readers of the task data sets (sentences, tagged words, SQuAD questions), the tables and text files they come
in, and the examples they return."""
